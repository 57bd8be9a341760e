#!/usr/bin/env bash
# Session 11, call B (4 GPUs, H100 asked): the GPU mutation run on GPUs 0-2 (the survivors that new
# tests target and the mutants cut last time first, then the sample continued); beside it, on GPU 2,
# the validation-runs tests and two torchtask tests the 2 x H100 run did not reach; on GPU 3 alone,
# the counters file, then the torch bench test. Output to logs only, never to the call's stdout.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; python3 --version; which ncu; } > "$L/host.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
( export CUDA_VISIBLE_DEVICES=3
  step pytest-counters 250 python3 -m pytest -m gpu -s -v -n0 "${opts[@]}" tests/gpu/test_counters.py
  step pytest-torch-bench 240 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$BENCH" ) &
( export CUDA_VISIBLE_DEVICES=2
  step pytest-validation-runs 120 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py
  step pytest-torch-broken 150 python3 -m pytest -m gpu -v -n0 "${opts[@]}" \
    "tests/torchtask/test_gpu_import.py::test_broken_replies_are_refused[elementwise_gelu.wrong.md]" \
    "tests/torchtask/test_gpu_import.py::test_broken_replies_are_refused[linear_matmul.fp16.md]" ) &
step gpu-mutation ${LIMIT:-490} python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0,1,2 --slots-per-gpu 6 \
  --first "$(cat .device-tools/s11-first.txt)" --skip-done .device-tools/gm/s10-done-but-first.jsonl \
  --mutant-timeout-s 330 --budget-s 400 --results "$L/gpu-mutation.jsonl"
wait
cat "$L/rc.txt"
date -u
pkill -9 -f "pytest|cuda_llm|multiprocessing|gpu_mutation" 2>/dev/null; true
