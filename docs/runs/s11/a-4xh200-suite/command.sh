#!/usr/bin/env bash
# Session 11, call A (4 GPUs, H200 asked): the whole GPU suite. GPUs 0-2: every test but the counters
# file and the torch bench test, a pytest-xdist worker per GPU; GPU 3: the counters file, then the
# torch bench test; then the multi-GPU tests with every GPU. Each step's output goes to its own log
# (never to the call's stdout, so a straggler cannot hold the call open).
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; python3 --version; which ncu tmux; git log --oneline -1 2>/dev/null; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia|ray|textual|pytest|numpy)" > "$L/packages.txt"
N=$(nvidia-smi -L | wc -l)
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
( export CUDA_VISIBLE_DEVICES=$((N-1))
  step pytest-counters 200 python3 -m pytest -m gpu -s -v -n0 "${opts[@]}" tests/gpu/test_counters.py
  step pytest-torch-bench 250 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$BENCH" ) &
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((N-2))) CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu-rest ${LIMIT:-420} \
  python3 -m pytest -m gpu -n auto --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=40 -v
wait
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done
date -u
pkill -9 -f "pytest|cuda_llm|multiprocessing" 2>/dev/null; true
