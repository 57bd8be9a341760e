#!/usr/bin/env bash
# Session 15, call A (4 x H200): the whole GPU suite at this code with a pytest-xdist worker per GPU
# (counters file and torch bench test included), the multi-GPU tests with every GPU visible, and the
# round of 8 on 1, 2 and 4 GPUs. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u; git rev-parse HEAD 2>/dev/null
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nvidia-smi topo -m > "$L/topo.txt" 2>&1; nproc > "$L/host.txt"; which ncu >> "$L/host.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
N=$(nvidia-smi -L | wc -l)
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu ${LIMIT:-330} \
  python3 -m pytest -m gpu -n "$N" --dist load "${opts[@]}" --durations=30 -v
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
GPUS=1,2; [ "$N" -ge 4 ] && GPUS=1,2,4
step round 120 python3 -m bench.round_gpus --gpus $GPUS --repeats 5 --programs --json "$L/round.json"
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 8 "$f"; done
grep -h "x);\|x)" "$L"/round.log | head
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s15a-logs.tgz" logs && rm -rf "$L"; true
