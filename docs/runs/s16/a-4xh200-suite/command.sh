#!/usr/bin/env bash
# Session 16, call A (4 x H200), engine code of HEAD: the multi-GPU tests with every GPU; then at
# once: the whole GPU suite but the torch bench test, a worker per GPU on GPUs 0-2 (then mutants
# there), the torch bench test alone on the last GPU to its end (then the vault's mutants there).
source "$(dirname "$0")/common.sh"
T=${LIMIT:-570}
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
( CUDA_VISIBLE_DEVICES=$LAST step pytest-torch-bench 430 python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$BENCH"
  gv mutation-vault $((T-SECONDS)) $LAST ) &
MID=$(seq -s, 0 $((N-2)))
CUDA_VISIBLE_DEVICES=$MID CUDA_LLM_TEST_GPU_PER_WORKER=1 step pytest-gpu 430 \
  python3 -m pytest -m gpu -n $((N-1)) --dist load "${opts[@]}" --deselect "$BENCH" --durations=30 -v
FIRST="xǁHarnessǁcount_diff__mutmut_7,xǁHarnessǁcompare__mutmut_3,xǁHarnessǁcompare__mutmut_8,$(python3 -c "import json; print(','.join(json.loads(l)['name'] for l in open('docs/runs/s15/b-4xh200-mutation/gpu-mutation.jsonl') if json.loads(l)['status']=='timeout'))")"
gm gpu-mutation $((T-SECONDS)) $MID --first "$FIRST"
wait
finish s16a
