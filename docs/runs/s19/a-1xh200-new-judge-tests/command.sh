#!/usr/bin/env bash
# Session 19, call A (1 x H200): a trial branch of the judge's new checks (issue 43 items 1-4) and the
# three tests no check pinned (issue 46), merged before the rest: their new GPU tests first, then the
# GPU tests of the judge they change, then what the checks cost a round.
source "$(dirname "$0")/../common.sh"
FILES=(tests/gpu/test_timed_runs_checked.py tests/gpu/test_routine_checks.py tests/gpu/test_judge_checks.py
  tests/gpu/test_validation_runs.py tests/gpu/test_negative_controls.py tests/gpu/test_stale_memory.py
  tests/gpu/test_timing.py tests/faults)
for f in "${FILES[@]}"; do
  left=$((${LIMIT:-470} - SECONDS)); [ $left -gt 20 ] || break
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done
left=$((${LIMIT:-540} - SECONDS)); [ $left -gt 30 ] && step bench-run-checks-cost $left python3 -m bench.run_checks_cost --repeats 3
finish
