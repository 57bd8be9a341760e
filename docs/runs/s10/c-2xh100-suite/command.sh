#!/usr/bin/env bash
# Session 10, call C (2 GPUs, H200 asked): the multi-GPU tests, the round of 8 on 1 and 2 GPUs, then
# the GPU suite with a worker per GPU (the counters file and the torch bench test apart).
cd "$(dirname "$0")/.."
date -u; 
source bench/gpu-setup.sh .device-wheels
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; python3 --version; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia-ml|ray|textual|pytest|numpy)" > "$L/packages.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1; echo "$name rc=$? in $((SECONDS-t0)) s" | tee -a "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round_gpus 50 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round_gpus.json" --md "$L/round_gpus.md"
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu-rest ${LIMIT:-430} python3 -m pytest -m gpu -n auto --dist load "${opts[@]}" \
  --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=30 -v
cat "$L/rc.txt"
tail -n 6 "$L/pytest-gpu-rest.log"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs
date -u
