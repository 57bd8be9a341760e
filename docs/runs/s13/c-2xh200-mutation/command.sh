#!/usr/bin/env bash
# Session 13, call C (2 x H200): GPU 0, test_validation_runs.py with its three new tests, then the three
# mutants they were written for (of call B's survivors) against that file; GPU 1, the GPU mutation
# sample continued. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
DONE=(.device-tools/gm/results1.jsonl docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl
  docs/runs/s13/b-2xh200-counters-mutation/gpu-mutation.jsonl docs/runs/s13/b-2xh200-counters-mutation/mutation-validate16.jsonl)
( export CUDA_VISIBLE_DEVICES=0
  step pytest-validation-runs 150 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py
  step mutation-targeted 200 env -u CUDA_VISIBLE_DEVICES python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 3 \
    --only "x_compare_on_device__mutmut_79,x_run_case__mutmut_13,x_validate__mutmut_83" --tests tests/gpu/test_validation_runs.py \
    --mutant-timeout-s 150 --budget-s 30 --results "$L/mutation-targeted.jsonl" ) &
step gpu-mutation ${LIMIT:-430} python3 -m bench.gpu_mutation run .device-tools/gm --gpus 1 --slots-per-gpu 6 \
  --skip-done "${DONE[@]}" --seed 15 --mutant-timeout-s 200 --budget-s ${BUDGET:-280} --results "$L/gpu-mutation.jsonl"
wait
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s13c-logs.tgz" logs && rm -rf "$L"; true
