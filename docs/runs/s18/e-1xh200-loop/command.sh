#!/usr/bin/env bash
# Session 18, call E (1 x H200): the GPU tests that run whole sessions through the loop, at the code
# that stops judging a reply which repeats a judged program (engine/fsr/repeats.py): the replay of a
# recorded session (its round 2 sends round 1's kernel again), the paper table (the baseline sent back
# as a candidate) and the headless session's counters line (round 2 repeats round 1).
source "$(dirname "$0")/../common.sh"
step pytest-replay 200 python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 tests/gpu/test_replay.py
step pytest-counters-session 90 python3 -m pytest -m gpu -v -n0 "${opts[@]}" \
  "tests/gpu/test_counters.py::test_a_headless_session_s_next_prompt_carries_the_counters_line"
step pytest-paper-table $((${LIMIT:-330} - SECONDS)) python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 tests/gpu/test_paper_table.py
finish
