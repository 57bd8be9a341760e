#!/usr/bin/env bash
# Session 18, call C (1 x H200): the one GPU test call B's limit stopped, alone.
source "$(dirname "$0")/../common.sh"
step pytest-torch-bench 480 python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 \
  "tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
finish
