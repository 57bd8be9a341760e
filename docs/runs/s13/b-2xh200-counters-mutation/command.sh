#!/usr/bin/env bash
# Session 13, call B (2 x H200): the counters file on GPU 0 beside the torch bench test on GPU 1 (the two
# parts of `pytest -m gpu` call A left out); then validate's mutant 16 against the test written for it;
# then the GPU mutation sample continued on both GPUs. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
CUDA_VISIBLE_DEVICES=0 step pytest-counters 260 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_counters.py &
CUDA_VISIBLE_DEVICES=1 step pytest-torch-bench 260 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$BENCH" &
wait
DONE=(.device-tools/gm/results1.jsonl docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl)
step mutation-validate16 150 python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 1 \
  --only "x_validate__mutmut_16" --tests tests/gpu/test_validation_runs.py --mutant-timeout-s 120 --budget-s 30 \
  --results "$L/mutation-validate16.jsonl" &
step gpu-mutation ${LIMIT:-300} python3 -m bench.gpu_mutation run .device-tools/gm --gpus 1 --slots-per-gpu 6 \
  --skip-done "${DONE[@]}" --seed 14 --mutant-timeout-s 200 --budget-s ${BUDGET:-90} --results "$L/gpu-mutation.jsonl"
wait
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s13b-logs.tgz" logs && rm -rf "$L"; true
