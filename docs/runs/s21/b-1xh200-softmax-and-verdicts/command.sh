#!/usr/bin/env bash
# Session 21, call B (1 x H200): the row softmax of 393216 columns again (call A found eager judged
# wrong under the RMS rule and 147 s of host-side description; both fixed in b360750), then the GPU
# suite's files that assert verdicts only, six at a time, with the torch bench test (fast_p against
# eager, ~230 s alone; it asserts only that the loop's best beats eager) beside them.
source "$(dirname "$0")/../common.sh"
step bench-large-softmax 150 python3 -m bench.large_problems --only softmax_393216 --json "$L/large-softmax.json"
CORRECTNESS=(tests/faults/test_gpu_faults.py tests/gpu/test_expected_vault.py tests/gpu/test_library.py
  tests/gpu/test_pinned_cache.py tests/gpu/test_stale_memory.py tests/gpu/test_validation_runs.py
  tests/torchtask/test_gpu_import_types.py tests/gpu/test_baselines.py tests/gpu/test_device_compare.py
  tests/gpu/test_judge_checks.py tests/gpu/test_negative_controls.py tests/torchtask/test_whole_models.py
  tests/gpu/test_bf16.py tests/torchtask/test_gpu_import.py)
step pytest-torch-bench 390 python3 -m pytest -m gpu -v -n0 "${opts[@]}" \
  "tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager" &
step pytest-correctness 380 python3 -m pytest -m gpu -v -n 6 --dist loadgroup "${opts[@]}" --durations=30 \
  -k "not test_bench_prints_fast_p" "${CORRECTNESS[@]}"
wait
finish
