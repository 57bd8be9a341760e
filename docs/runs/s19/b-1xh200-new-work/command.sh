#!/usr/bin/env bash
# Session 19, call B (1 x H200): the GPU parts of this session's issues at the merged code, new tests
# first: timed runs checked (43), the checks no test pinned (46), bfloat16 (45), imported types,
# cheats and whole models (42, 41), then issue 41's bench at the field's sizes, then KernelBench's own
# files (commit 423217d, carried in .kb/): imported and eager judged at the files' sizes.
source "$(dirname "$0")/../common.sh"
FILES=(tests/gpu/test_timed_runs_checked.py tests/gpu/test_routine_checks.py tests/gpu/test_bf16.py
  tests/gpu/test_device_compare.py tests/torchtask/test_gpu_import_types.py tests/torchtask/test_gpu_cheats.py
  tests/torchtask/test_whole_models.py tests/gpu/test_validation_runs.py)
for f in "${FILES[@]}"; do
  left=$((${LIMIT:-330} - SECONDS)); [ $left -gt 20 ] || break
  step "pytest-$(basename "$f" .py)" $left python3 -m pytest -m gpu -v -n0 "${opts[@]}" --durations=5 "$f"
done
left=$((500 - SECONDS)); [ $left -gt 60 ] && step bench-large-problems $left python3 -m bench.large_problems --json "$L/large.json"
# KernelBench's files as they are: import, then eager judged (eval TASK baseline) at the file's sizes.
kb() { local f=$1 t; t=$(timeout 200 python3 -m cuda_llm tasks import "$f" --dir "$L/kbtasks" 2>&1 | tee -a "$L/kb-import.log" | sed -n 's|^created [^ ]*/\([A-Za-z0-9_]*\) from.*|\1|p' | head -1)
  echo "== $f -> ${t:-refused}" >> "$L/kb-eval.log"; [ -n "$t" ] && CUDA_LLM_TASK_PATH="$L/kbtasks" timeout 100 python3 -m cuda_llm eval "$t" baseline >> "$L/kb-eval.log" 2>&1; echo "rc=$?" >> "$L/kb-eval.log"; }
for f in .kb/*.py; do [ $((580 - SECONDS)) -gt 30 ] || break; kb "$f"; done
finish
