#!/usr/bin/env bash
# Session 21: issue 41's last item, KernelBench's own evaluation beside ours on its level1/26_GELU_
# (4096 x 393216 floats) with the same kernel (python -m bench.kernelbench_side_by_side). Before the
# call, on the machine that sends it: `bash bench/kernelbench_copy.sh /path/to/KernelBench`, then
# carry .kernelbench and .device-wheels. About 2.5-3.5 minutes: our import and eval (~25 s), then
# KernelBench's (nvcc through ninja 30-60 s, 5 correctness trials each drawing 6.4 GB of torch.rand
# on one CPU core, 100 timed trials of the kernel and of eager).
source "$(dirname "$0")/../common.sh"
cat .kernelbench/COMMIT > "$L/kernelbench-commit.txt" 2>&1
step kb-side-by-side 250 python3 -m bench.kernelbench_side_by_side --ours-timeout 60 --kb-timeout 170 \
  --out "$L/kb" --json "$L/kb-side-by-side.json"
finish
