#!/usr/bin/env bash
# Session 14, call C (2 x H200): GPU 0, the vault's GPU tests with the validation-runs and device-compare
# files, then the vault's mutants that the CPU tests left (gv/gpu-only.txt) against tests/gpu/test_expected_vault.py;
# GPU 1, the GPU mutation sample of validate.py, harness.py and device_compare.py continued at cc4fe56
# (.device-tools/old: the mutants' patches are of those files as they were there). Then, every GPU idle,
# the round of 8 at cc4fe56 and at this code once more. Logs end up in one archive.
cd "$(dirname "$0")/.."
REPO=$PWD
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
OLD=$REPO/.device-tools/old
DONE=(.device-tools/gm/results1.jsonl docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl
  docs/runs/s13/b-2xh200-counters-mutation/gpu-mutation.jsonl docs/runs/s13/b-2xh200-counters-mutation/mutation-validate16.jsonl
  docs/runs/s13/c-2xh200-mutation/gpu-mutation.jsonl docs/runs/s13/c-2xh200-mutation/mutation-targeted.jsonl)
DONE=("${DONE[@]/#/$REPO/}")
( export CUDA_VISIBLE_DEVICES=0
  step pytest-vault 150 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_expected_vault.py \
    tests/gpu/test_validation_runs.py tests/gpu/test_device_compare.py
  step mutation-vault ${VLIMIT:-330} env -u CUDA_VISIBLE_DEVICES python3 -m bench.gpu_mutation run .device-tools/gv --gpus 0 \
    --slots-per-gpu 8 --only "$(cat .device-tools/gv/gpu-only.txt)" --tests tests/gpu/test_expected_vault.py \
    --mutant-timeout-s 90 --budget-s ${VBUDGET:-250} --results "$L/mutation-vault.jsonl" ) &
( cd "$OLD" && PYTHONPATH=$OLD step gpu-mutation ${LIMIT:-470} python3 -m bench.gpu_mutation run "$REPO/.device-tools/gm" \
    --gpus 1 --slots-per-gpu 6 --skip-done "${DONE[@]}" --seed 16 --mutant-timeout-s 200 --budget-s ${BUDGET:-330} \
    --results "$L/gpu-mutation.jsonl" )
wait
( cd "$OLD" && PYTHONPATH=$OLD step round-old-3 80 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round-old-3.json" )
step round-new-3 80 python3 -m bench.round_gpus --gpus 1,2 --repeats 5 --programs --json "$L/round-new-3.json"
cat "$L/rc.txt"
for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 4 "$f"; done
for f in "$L"/mutation-*.log "$L"/gpu-mutation.log; do echo "== $f"; tail -n 5 "$f"; done
grep -h "x);" "$L"/round-*.log
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s14c-logs.tgz" logs && rm -rf "$L"; true
