#!/usr/bin/env bash
# Session 18, call D (a host of 2 or 4 GPUs, if one is lent): the multi-GPU tests with every GPU, then
# the round of 8 on 1, 2 (and 4) GPUs at this code.
source "$(dirname "$0")/../common.sh"
N=$(nvidia-smi -L | wc -l); G=1,2; [ "$N" -ge 4 ] && G=1,2,4
step pytest-multi-gpu 90 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round-gpus 300 python3 -m bench.round_gpus --gpus $G --repeats 5 --programs --json "$L/round.json" --md "$L/round.md"
tail -n 40 "$L/round-gpus.log"
finish
