#!/usr/bin/env bash
# Session 19, call C (1 x H200), the last of the session's device time: the tests call B's limit left
# and the one it failed (after its fix), issue 41's bench with a worker per problem, then the GPU tests
# of the judge that this session's merges changed, most affected first, to the call's limit.
source "$(dirname "$0")/../common.sh"
FILES=(tests/gpu/test_timed_runs_checked.py tests/torchtask/test_gpu_cheats.py tests/torchtask/test_whole_models.py
  tests/gpu/test_validation_runs.py)
run_files() { for f in "$@"; do
  left=$((${LIMIT:-520} - SECONDS)); [ $left -gt 25 ] || break
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done; }
run_files "${FILES[@]}"
left=$((520 - SECONDS)); [ $left -gt 60 ] && step bench-large-problems $((left < 150 ? left : 150)) python3 -m bench.large_problems --json "$L/large.json"
run_files tests/gpu/test_baselines.py tests/gpu/test_library.py tests/gpu/test_judge_checks.py \
  tests/gpu/test_negative_controls.py tests/gpu/test_stale_memory.py tests/faults tests/gpu/test_timing.py
left=$((545 - SECONDS)); [ $left -gt 30 ] && step bench-run-checks-cost $left python3 -m bench.run_checks_cost --tasks layernorm --repeats 3
finish
