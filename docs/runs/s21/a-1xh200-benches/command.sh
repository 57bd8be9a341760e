#!/usr/bin/env bash
# Session 21, call A (1 x H200): issue 41's open figure, the row softmax of 393216 columns at the
# file's size (python -m bench.large_problems), then issue 43's: what the checks cost a round of every
# built-in task with a one-launch baseline, with each timed program's sampling (--programs) to find
# where layernorm's extra samples go.
source "$(dirname "$0")/../common.sh"
step bench-large-softmax 200 python3 -m bench.large_problems --only softmax_393216 --json "$L/large-softmax.json"
step bench-run-checks-cost 340 python3 -m bench.run_checks_cost --tasks all --repeats 2 --programs --json "$L/checks-cost.json"
finish
