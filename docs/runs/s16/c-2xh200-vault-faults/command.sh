#!/usr/bin/env bash
# Session 16, call C (2 x H200; 4-GPU hosts were no longer lent), HEAD with the vault's release fix and
# the driver's error names: the multi-GPU tests; on GPU 0 the GPU tests of the vault, the comparison,
# validation and the judge's checks, then the mutation run continued; on GPU 1 the fault tests, the
# vault's mutants its new CPU tests leave, and the PyTorch binder's mutant.
source "$(dirname "$0")/common.sh"
T=${LIMIT:-390}
step pytest-multi-gpu 50 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
( CUDA_VISIBLE_DEVICES=1 step pytest-faults 200 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/faults
  step mutation-vault 130 python3 -m bench.gpu_mutation run .device-tools/gv2 --gpus 1 --slots-per-gpu 8 \
    --only "$(cat .device-tools/gv2/gpu-left.txt)" --tests tests/gpu/test_expected_vault.py \
    --seed 17 --mutant-timeout-s 90 --budget-s 30 --results "$L/mutation-vault.jsonl"
  step mutation-binder $((T-SECONDS)) python3 -m bench.gpu_mutation run .device-tools/gm --gpus 1 --slots-per-gpu 1 \
    --only x_run_case__mutmut_34 --tests "tests/torchtask/test_gpu_import.py::test_eager_and_the_hand_written_reply_pass[scale_add_relu]" \
    --mutant-timeout-s 200 --budget-s 5 --results "$L/mutation-binder.jsonl" ) &
CUDA_VISIBLE_DEVICES=0 step pytest-judge 200 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_expected_vault.py \
  tests/gpu/test_device_compare.py tests/gpu/test_validation_runs.py tests/gpu/test_judge_checks.py \
  tests/gpu/test_stale_memory.py tests/gpu/test_negative_controls.py
gm gpu-mutation $((T-SECONDS)) 0
wait
finish s16c
