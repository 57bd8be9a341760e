#!/usr/bin/env bash
# Session 11, call C (2 GPUs, H100 asked): on an H100, the GPU tests that have not run on one at this
# engine code: GPU 0 the counters file, then two torchtask tests; GPU 1 the torch bench test, then
# the validation-runs tests. Output to logs only, never to the call's stdout.
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
( export CUDA_VISIBLE_DEVICES=0
  step pytest-counters 320 python3 -m pytest -m gpu -s -v -n0 "${opts[@]}" tests/gpu/test_counters.py
  step pytest-torch-broken 120 python3 -m pytest -m gpu -v -n0 "${opts[@]}" \
    "tests/torchtask/test_gpu_import.py::test_broken_replies_are_refused[elementwise_gelu.wrong.md]" \
    "tests/torchtask/test_gpu_import.py::test_broken_replies_are_refused[linear_matmul.fp16.md]" ) &
( export CUDA_VISIBLE_DEVICES=1
  step pytest-torch-bench 250 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$BENCH"
  step pytest-validation-runs 120 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py ) &
wait
cat "$L/rc.txt"
date -u
pkill -9 -f "pytest|cuda_llm|multiprocessing" 2>/dev/null; true
