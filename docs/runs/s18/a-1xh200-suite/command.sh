#!/usr/bin/env bash
# Session 18, call A (1 x H200): the GPU tests, one file after another, those the code since the last
# GPU run touches first (the loop's resume path, the timing test's placements), to the call's limit.
source "$(dirname "$0")/../common.sh"
FILES=(tests/gpu/test_timing.py tests/gpu/test_replay.py tests/gpu/test_validation_runs.py
  tests/gpu/test_judge_checks.py tests/gpu/test_expected_vault.py tests/gpu/test_device_compare.py
  tests/gpu/test_negative_controls.py tests/gpu/test_stale_memory.py tests/gpu/test_pinned_cache.py
  tests/gpu/test_multi_gpu.py tests/gpu/test_roofline.py tests/gpu/test_baselines.py tests/gpu/test_library.py
  tests/faults)
for f in "${FILES[@]}"; do
  left=$((${LIMIT:-560} - SECONDS)); [ $left -gt 20 ] || break
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done
finish
