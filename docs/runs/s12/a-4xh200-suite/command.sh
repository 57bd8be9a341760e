#!/usr/bin/env bash
# Session 12, call A (4 x H200): GPUs 0-2, the whole GPU suite but the counters file and the torch
# bench test (a pytest-xdist worker per GPU); GPU 3, the validation-runs tests (four new), then the
# five mutants they were written for, against that file; then, with every GPU idle, the round of 8
# on 1, 2 and 4 GPUs and the multi-GPU tests. Each step logs to its own file.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; python3 --version; which ncu tmux; } > "$L/host.txt" 2>&1
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|cupy|cuda|nvidia|ray|textual|pytest|numpy)" > "$L/packages.txt"
N=$(nvidia-smi -L | wc -l)
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
( export CUDA_VISIBLE_DEVICES=$((N-1))
  step pytest-validation-runs 120 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py
  step mutation-killable 280 env -u CUDA_VISIBLE_DEVICES python3 -m bench.gpu_mutation run .device-tools/gm --gpus $((N-1)) --slots-per-gpu 5 \
    --only "$(cat .device-tools/s12-killable.txt)" --tests tests/gpu/test_validation_runs.py \
    --mutant-timeout-s 200 --budget-s 200 --results "$L/mutation-killable.jsonl" ) &
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((N-2))) CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu-rest ${LIMIT:-410} \
  python3 -m pytest -m gpu -n auto --dist load "${opts[@]}" --ignore=tests/gpu/test_counters.py --deselect "$BENCH" --durations=40 -v
wait
step round-gpus 110 python3 -m bench.round_gpus --gpus 1,2,4 --repeats 3 --programs --json "$L/round_gpus.json"
step pytest-multi-gpu 40 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done
date -u
pkill -9 -f "pytest|cuda_llm|multiprocessing|gpu_mutation" 2>/dev/null; true
