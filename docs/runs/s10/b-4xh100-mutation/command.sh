#!/usr/bin/env bash
# Session 10, call B: the GPU mutation run, continued (the mutants of call A not run again).
cd "$(dirname "$0")/.."
date -u
source bench/gpu-setup.sh .device-wheels
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$L/gpus.txt"
t0=$SECONDS
timeout -k 5 ${LIMIT:-440} python3 -m bench.gpu_mutation run .device-tools/gm --slots-per-gpu ${SLOTS:-6} --budget-s ${BUDGET:-280} \
  --mutant-timeout-s 150 --control-every 60 --skip-done .device-tools/gm/results1.jsonl \
  --results "$L/gpu-mutation.jsonl" > "$L/gpu-mutation.log" 2>&1
echo "gpu mutation rc=$? in $((SECONDS-t0)) s" | tee -a "$L/rc.txt"
tail -n 8 "$L/gpu-mutation.log"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
date -u
