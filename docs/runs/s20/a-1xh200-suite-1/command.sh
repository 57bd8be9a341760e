#!/usr/bin/env bash
# Session 20, call A (1 x H200): the GPU suite at 71481d1, part 1. The files whose tests judge
# correctness only (verdicts, no timing figure asserted) run four at a time on the one GPU (they
# share it, so they are slower, but what they check does not depend on time); then the timing
# tests one file at a time with the GPU to themselves, the checks-cost bench on layernorm first
# (issue 43's open figure), to the call's limit. Call B runs what is left.
source "$(dirname "$0")/../common.sh"
CORRECTNESS=(tests/faults/test_gpu_faults.py tests/gpu/test_expected_vault.py tests/gpu/test_library.py
  tests/gpu/test_pinned_cache.py tests/gpu/test_stale_memory.py tests/gpu/test_validation_runs.py
  tests/torchtask/test_gpu_import_types.py tests/gpu/test_baselines.py tests/gpu/test_device_compare.py
  tests/gpu/test_judge_checks.py tests/gpu/test_negative_controls.py tests/torchtask/test_whole_models.py
  tests/gpu/test_bf16.py tests/torchtask/test_gpu_import.py)
step pytest-correctness 300 python3 -m pytest -m gpu -v -n 4 --dist loadgroup "${opts[@]}" --durations=30 \
  -k "not test_bench_prints_fast_p" "${CORRECTNESS[@]}"
step bench-run-checks-cost 120 python3 -m bench.run_checks_cost --tasks layernorm --repeats 3
run_files() { for f in "$@"; do
  left=$((${LIMIT:-560} - SECONDS)); [ $left -gt 25 ] || { echo "$f not run (limit)" >> "$L/rc.txt"; continue; }
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done; }
run_files tests/gpu/test_timing.py tests/gpu/test_timed_runs_checked.py tests/gpu/test_routine_checks.py \
  tests/gpu/test_replay.py tests/gpu/test_roofline.py tests/faults/test_l2_residency.py \
  tests/torchtask/test_gpu_cheats.py tests/gpu/test_paper_table.py
finish
