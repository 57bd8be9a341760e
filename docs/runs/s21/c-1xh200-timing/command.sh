#!/usr/bin/env bash
# Session 21, call C (1 x H200), the session's last device time: call B's two failures again, alone
# (the window test, its assertion on the patterns' case tags fixed; the 2-second kernel, which
# outlasted the 4 s launch limit with seven processes sharing the GPU), then the files that assert
# timing figures, one at a time with the GPU to themselves, to the call's limit.
source "$(dirname "$0")/../common.sh"
step pytest-reruns 90 python3 -m pytest -m gpu -v -n0 "${opts[@]}" \
  "tests/gpu/test_validation_runs.py::test_a_failure_described_from_a_window_lists_what_the_whole_output_lists" \
  "tests/faults/test_gpu_faults.py::test_hostile_candidate[a 2-second kernel]"
run_files() { for f in "$@"; do
  left=$((${LIMIT:-575} - SECONDS)); [ $left -gt 25 ] || { echo "$f not run (limit)" >> "$L/rc.txt"; continue; }
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done; }
run_files tests/gpu/test_timing.py tests/gpu/test_timed_runs_checked.py tests/gpu/test_routine_checks.py \
  tests/gpu/test_roofline.py tests/faults/test_l2_residency.py tests/gpu/test_replay.py \
  tests/torchtask/test_gpu_cheats.py tests/gpu/test_paper_table.py tests/gpu/test_counters.py
finish
