#!/usr/bin/env bash
# Session 14, call D (2 x H200): the whole GPU suite at this code (the vault of expected values as it
# lands) with a pytest-xdist worker per GPU, without the counters file and the torch bench test; then
# the multi-GPU tests on both GPUs, and the round of 8 once more. Logs end up in one archive.
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
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu ${LIMIT:-380} \
  python3 -m pytest -m gpu -n 2 --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=30 -v
step pytest-multi-gpu 50 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round-new-4 60 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round-new-4.json"
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 6 "$f"; done
grep -h "x);" "$L"/round-*.log
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s14d-logs.tgz" logs && rm -rf "$L"; true
