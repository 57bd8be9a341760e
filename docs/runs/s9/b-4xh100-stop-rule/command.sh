#!/usr/bin/env bash
# Session 9, call B: the stop rule within placements against the pooled one (5 profiles of 5
# baselines each), then the multi-GPU tests, the named mutants and the round benches.
cd "$(dirname "$0")/.."
date -u
source bench/gpu-setup.sh .device-wheels > /dev/null
L="$OUT/logs"; mkdir -p "$L"
nvidia-smi --query-gpu=index,name --format=csv,noheader
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout "$limit" "$@" > "$L/$name.log" 2>&1; echo "$name rc=$? in $((SECONDS-t0)) s" | tee -a "$L/rc2.txt"; }
TASKS=matrix_transpose,layernorm,vector_add,matmul,reduction_sum
step stop-within 150 python3 .device-tools/stopexp.py $TASKS 5
cp engine/gpu/stop_rule.py /tmp/stop_rule.py
sed -i 's/and spread_within_placements(samples, placements) <= settings.stop_rel_iqr/and rel_iqr(samples) <= settings.stop_rel_iqr/' engine/gpu/stop_rule.py
grep -c "and rel_iqr(samples) <= settings.stop_rel_iqr" engine/gpu/stop_rule.py
step stop-pooled 200 python3 .device-tools/stopexp.py $TASKS 5
cp /tmp/stop_rule.py engine/gpu/stop_rule.py
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
step pytest-multi-gpu 60 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/gpu/test_multi_gpu.py
step round_gpus 100 python3 -m bench.round_gpus --gpus 1,2,4 --repeats 5 --programs --json "$L/round_gpus.json" --md "$L/round_gpus.md"
cat "$L/rc2.txt"
for f in stop-within stop-pooled; do echo "== $f"; cat "$L/$f.log" | grep -v "^cuda"; done
for f in pytest-multi-gpu round_gpus; do echo "== $f"; tail -n 12 "$L/$f.log"; done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
date -u
