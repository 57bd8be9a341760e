#!/usr/bin/env bash
# Session 9, call A: the whole GPU suite over every GPU of the host (one pytest-xdist worker per GPU
# but the last); on the last GPU the counters tests, then the torch bench test (184 s alone on an H100).
cd "$(dirname "$0")/.."
date -u; git log --oneline -1 2>/dev/null || true
source bench/gpu-setup.sh .device-wheels
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nvidia-smi topo -m > "$L/topo.txt" 2>&1
{ which tmux ncu; ncu --version | tail -1; nproc; python3 --version; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia-ml|ray|textual|pytest|numpy)" > "$L/packages.txt"
N=$(nvidia-smi -L | wc -l)
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
( t0=$SECONDS; CUDA_VISIBLE_DEVICES=$((N-1)) timeout 300 python3 -m pytest -m gpu -s -n0 "${opts[@]}" tests/gpu/test_counters.py \
    > "$L/pytest-gpu-counters.log" 2>&1; echo "counters (GPU $((N-1))) rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"
  t0=$SECONDS; CUDA_VISIBLE_DEVICES=$((N-1)) timeout 240 python3 -m pytest -m gpu -v -s -n0 "${opts[@]}" "$BENCH" \
    > "$L/pytest-torch-bench.log" 2>&1; echo "torch bench (GPU $((N-1))) rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt" ) &
t0=$SECONDS
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((N-2))) CUDA_LLM_TEST_GPU_PER_WORKER=1 timeout 540 \
  python3 -m pytest -m gpu -n auto --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=40 -v \
  > "$L/pytest-gpu-rest.log" 2>&1
echo "rest (GPUs 0-$((N-2)), a worker each) rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"
wait
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 4 "$f"; done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
date -u
