#!/usr/bin/env bash
# Session 20, call C (1 x H200), the session's last device time: the judge's device-side named
# mutants (issue 46: each new GPU test red with its check removed), the correctness files call A's
# limit cut (four at a time), then the timing files A did not reach, one at a time, to the limit.
source "$(dirname "$0")/../common.sh"
step named-mutants-gpu 200 python3 bench/named_mutants.py --gpu
step pytest-correctness-rest 170 python3 -m pytest -m gpu -v -n 4 --dist loadgroup "${opts[@]}" --durations=10 \
  tests/gpu/test_bf16.py tests/torchtask/test_whole_models.py tests/torchtask/test_gpu_import_types.py \
  tests/gpu/test_negative_controls.py "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[spmv_csr]"
run_files() { for f in "$@"; do
  left=$((${LIMIT:-540} - SECONDS)); [ $left -gt 25 ] || { echo "$f not run (limit)" >> "$L/rc.txt"; continue; }
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done; }
run_files tests/gpu/test_timed_runs_checked.py tests/gpu/test_routine_checks.py tests/gpu/test_replay.py \
  tests/gpu/test_roofline.py tests/faults/test_l2_residency.py tests/torchtask/test_gpu_cheats.py tests/gpu/test_paper_table.py
finish
