#!/usr/bin/env bash
# Session 14, call E (2 x H200, right after D): the vault's mutants that its CPU tests leave
# (gv/gpu-only.txt), on both GPUs, against tests/gpu/test_expected_vault.py. Logs in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
step mutation-vault ${LIMIT:-230} python3 -m bench.gpu_mutation run .device-tools/gv --slots-per-gpu 8 \
  --only "$(cat .device-tools/gv/gpu-only.txt)" --tests tests/gpu/test_expected_vault.py \
  --mutant-timeout-s 90 --budget-s ${BUDGET:-150} --results "$L/mutation-vault.jsonl"
cat "$L/rc.txt"; tail -n 6 "$L/mutation-vault.log"
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s14e-logs.tgz" logs && rm -rf "$L"; true
