#!/usr/bin/env bash
# Session 18, call B (1 x H200, right after A): the rest of the GPU tests, one file after another.
source "$(dirname "$0")/../common.sh"
FILES=(tests/gpu/test_counters.py tests/gpu/test_paper_table.py tests/torchtask tests/cluster/test_gpu_cluster.py)
for f in "${FILES[@]}"; do
  left=$((${LIMIT:-570} - SECONDS)); [ $left -gt 20 ] || break
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done
finish
