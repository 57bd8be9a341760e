#!/usr/bin/env bash
# Session 12, call E (1 x H200): the GPU mutation sample continued on 6 slots, every earlier
# results file skipped. Logs end up in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
step gpu-mutation ${LIMIT:-470} python3 -m bench.gpu_mutation run .device-tools/gm --gpus 0 --slots-per-gpu 6 \
  --skip-done .device-tools/gm/results1.jsonl docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl \
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl \
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl \
  --seed 13 --mutant-timeout-s 200 --budget-s ${BUDGET:-230} --results "$L/gpu-mutation.jsonl"
cat "$L/rc.txt"
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s12e-logs.tgz" logs && rm -rf "$L"; true
