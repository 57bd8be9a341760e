#!/usr/bin/env bash
# Session 10, call A: the GPU mutation run of validate.py, harness.py and device_compare.py
# (bench/gpu_mutation.py), every GPU of the host, 6 slots a GPU.
cd "$(dirname "$0")/.."
date -u
source bench/gpu-setup.sh .device-wheels
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$L/gpus.txt"
nproc > "$L/host.txt"
t0=$SECONDS
timeout -k 5 560 python3 -m bench.gpu_mutation run .device-tools/gm --slots-per-gpu ${SLOTS:-6} --budget-s ${BUDGET:-380} \
  --results "$L/gpu-mutation.jsonl" > "$L/gpu-mutation.log" 2>&1
echo "gpu mutation rc=$? in $((SECONDS-t0)) s" | tee -a "$L/rc.txt"
tail -n 12 "$L/gpu-mutation.log"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
date -u
