#!/usr/bin/env bash
# Session 12, call C (1 x H200): the validation-runs tests again and the scrub mutants against them,
# the layernorm repeatability test three times, then the GPU mutation sample continued on 6 slots.
# Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
LN="tests/gpu/test_timing.py::test_repeated_profiles_agree_within_two_percent[layernorm]"
step pytest-validation-runs 90 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_validation_runs.py
for k in 1 2 3; do step pytest-layernorm-$k 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" "$LN"; done
step mutation-scrub 120 python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 \
  --slots-per-gpu 2 --only "xǁHarnessǁscrub_shared__mutmut_5,xǁHarnessǁscrub_shared__mutmut_6" \
  --tests tests/gpu/test_validation_runs.py --mutant-timeout-s 100 --budget-s 60 --results "$L/mutation-scrub.jsonl"
step gpu-mutation ${LIMIT:-300} python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 6 \
  --skip-done .device-tools/gm/results1.jsonl docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl \
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl .device-tools/gm/s12a-killable.jsonl \
  --seed 12 --mutant-timeout-s 250 --budget-s 40 --results "$L/gpu-mutation.jsonl"
cat "$L/rc.txt"
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s12c-logs.tgz" logs && rm -rf "$L"; true
