#!/usr/bin/env bash
# Session 20, call B (1 x H200, right after A on the warm machine): the counters file and the torch
# bench test (fast_p against eager), each with the GPU to itself.
source "$(dirname "$0")/../common.sh"
step pytest-test_counters 280 python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 tests/gpu/test_counters.py
step pytest-test_gpu_import-bench $((570 - SECONDS)) python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 \
  tests/torchtask/test_gpu_import.py -k test_bench_prints_fast_p
finish
