#!/usr/bin/env bash
# Session 13, call A (2 x H200): the whole GPU suite at the session's first code (a pytest-xdist worker
# per GPU), but the counters file and the torch bench test (call B); then the multi-GPU tests and the
# round of 8 on 1 and 2 GPUs. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u; git log -1 --format=%H 2>/dev/null || true
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; python3 --version; which ncu; nvidia-smi topo -m; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia|ray|textual|pytest|numpy)" > "$L/packages.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu-rest ${LIMIT:-390} \
  python3 -m pytest -m gpu -n 2 --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=40 -v
step pytest-multi-gpu 40 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round-gpus 80 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round_gpus.json"
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s13a-logs.tgz" logs && rm -rf "$L"; true
