#!/usr/bin/env bash
# Session 15, call C (4 x H200): GPU 0, the GPU tests changed after call B's triage, then the mutants
# they were written for; the last GPU, the torch bench test alone; the GPUs between, the mutation run
# continued (call B's verdicts skipped by name, the earlier sessions' where the function is unchanged;
# a longer mutant timeout than B's 150 s, which cut slow survivors); B's timeouts first. Logs in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
N=$(nvidia-smi -L | wc -l); LAST=$((N-1))
MID=$(seq -s, 1 $((N-2))); [ "$N" -le 2 ] && MID=0
EARLIER=(docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl
  docs/runs/s13/b-2xh200-counters-mutation/gpu-mutation.jsonl docs/runs/s13/b-2xh200-counters-mutation/mutation-validate16.jsonl
  docs/runs/s13/c-2xh200-mutation/gpu-mutation.jsonl docs/runs/s13/c-2xh200-mutation/mutation-targeted.jsonl)
T=${LIMIT:-520}
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
CUDA_VISIBLE_DEVICES=$LAST step pytest-torch-bench 300 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$BENCH" &
( export CUDA_VISIBLE_DEVICES=0
  step pytest-changed 200 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py tests/gpu/test_device_compare.py
  step mutation-targeted 200 env -u CUDA_VISIBLE_DEVICES python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 3 \
    --only "x_run_case__mutmut_65,x_summarize__mutmut_23,x_compare_on_device__mutmut_82" \
    --tests tests/gpu/test_validation_runs.py tests/gpu/test_device_compare.py \
    --mutant-timeout-s 190 --budget-s 10 --results "$L/mutation-targeted.jsonl" ) &
TIMEOUTS=$(python3 -c "import json; print(','.join(json.loads(l)['name'] for l in open('.device-tools/b/gpu-mutation.jsonl') if json.loads(l)['status']=='timeout'))")
step gpu-mutation $T python3 -m bench.gpu_mutation run .device-tools/gm --gpus $MID --slots-per-gpu 7 \
  --skip-done .device-tools/b/gpu-mutation.jsonl --earlier-dir .device-tools/gm-old --earlier-done "${EARLIER[@]}" \
  --first "$TIMEOUTS" --seed 16 --mutant-timeout-s 240 --budget-s $((T-250)) --results "$L/gpu-mutation.jsonl"
wait
cat "$L/rc.txt"; tail -n 4 "$L"/gpu-mutation.log "$L"/mutation-targeted.log; tail -n 3 "$L"/pytest-*.log
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s15c-logs.tgz" logs && rm -rf "$L"; true
