#!/usr/bin/env bash
# Session 14, call B (2 x H200): the round of 8 on 1 and 2 GPUs at cc4fe56 (before the vault of expected
# values, .device-tools/old) and at this code, alternated twice on the same host; then the whole GPU suite
# at this code with a pytest-xdist worker per GPU (without the counters file and the torch bench test),
# and the multi-GPU tests on both GPUs. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nvidia-smi topo -m > "$L/topo.txt" 2>&1
{ nproc; python3 --version; } > "$L/host.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
OLD=$PWD/.device-tools/old
for i in 1 2; do
  ( cd "$OLD" && PYTHONPATH=$OLD step round-old-$i 90 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round-old-$i.json" )
  step round-new-$i 90 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round-new-$i.json"
done
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu ${LIMIT:-360} \
  python3 -m pytest -m gpu -n 2 --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=30 -v
step pytest-multi-gpu 50 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 4 "$f"; done
grep -h "x);" "$L"/round-*.log
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s14b-logs.tgz" logs && rm -rf "$L"; true
