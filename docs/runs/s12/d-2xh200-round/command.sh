#!/usr/bin/env bash
# Session 12, call D (2 x H200): the judge-check and validation-run tests (one new each) and the
# multi-GPU tests; the poison mutant against the new test; then, both GPUs idle, the round of 8 and
# the five-task bench on 1 and 2 GPUs. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
{ nproc; nvidia-smi topo -m; } > "$L/host.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-checks 120 python3 -m pytest -m gpu -v -n 2 --dist load "${opts[@]}" \
  tests/gpu/test_judge_checks.py tests/gpu/test_validation_runs.py
step pytest-multi-gpu 40 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step mutation-poison 100 python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 1 \
  --only "x_poison__mutmut_1" --tests tests/gpu/test_judge_checks.py --mutant-timeout-s 80 --budget-s 30 \
  --results "$L/mutation-poison.jsonl"
step round-gpus 90 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round_gpus.json"
step round-tasks 200 python3 -m bench.round_tasks --gpus 1,2 --repeats 1 --programs --json "$L/round_tasks.json"
cat "$L/rc.txt"
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s12d-logs.tgz" logs && rm -rf "$L"; true
