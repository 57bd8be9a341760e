#!/usr/bin/env bash
# Session 9, call E (2 GPUs): the multi-GPU tests, the round of 8 on 1 and 2 GPUs, then as much of
# the GPU suite as the time allows, a worker per GPU.
cd "$(dirname "$0")/.."
date -u
source bench/gpu-setup.sh .device-wheels
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nvidia-smi topo -m > "$L/topo.txt" 2>&1
{ which tmux ncu; ncu --version | tail -1; nproc; python3 --version; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia-ml|ray|textual|pytest|numpy)" > "$L/packages.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" > "$L/$name.log" 2>&1; echo "$name rc=$? in $((SECONDS-t0)) s" | tee -a "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round_gpus 50 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round_gpus.json" --md "$L/round_gpus.md"
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu-rest 380 python3 -m pytest -m gpu -n auto --dist load "${opts[@]}" \
  --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=30 -v
cat "$L/rc.txt"
for f in pytest-multi-gpu pytest-gpu-rest; do echo "== $f"; tail -n 8 "$L/$f.log"; done
echo "== round_gpus"; grep -v " on GPU " "$L/round_gpus.log" | head -30
grep -c PASSED "$L/pytest-gpu-rest.log"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
date -u
