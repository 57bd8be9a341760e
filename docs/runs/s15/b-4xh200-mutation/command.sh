#!/usr/bin/env bash
# Session 15, call B: GPU mutation at this code. The mutants of validate.py, harness.py and
# device_compare.py (generated at HEAD; an earlier run's verdict stands only where the function is
# unchanged since cc4fe56, --done-at), compare_on_device's first, on every GPU but the last; the
# vault's mutants that its CPU tests leave, on the last GPU. Logs in one archive.
cd "$(dirname "$0")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$L/gpus.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s" >> "$L/rc.txt"; }
N=$(nvidia-smi -L | wc -l); LAST=$((N-1))
GM=$(seq -s, 0 $((N-2))); [ "$N" -eq 1 ] && GM=0
DONE=(docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl
  docs/runs/s13/b-2xh200-counters-mutation/gpu-mutation.jsonl docs/runs/s13/b-2xh200-counters-mutation/mutation-validate16.jsonl
  docs/runs/s13/c-2xh200-mutation/gpu-mutation.jsonl docs/runs/s13/c-2xh200-mutation/mutation-targeted.jsonl
  ${MORE_DONE:-})
T=${LIMIT:-530}
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
( CUDA_VISIBLE_DEVICES=$LAST step pytest-torch-bench 280 python3 -m pytest -m gpu -v -n0 -o "addopts=-ra --strict-markers" -p no:cacheprovider "$BENCH"
  step mutation-vault $((T-SECONDS)) python3 -m bench.gpu_mutation run .device-tools/gv --gpus $LAST --slots-per-gpu 8 \
  --only "$(cat .device-tools/gv/gpu-only.txt)" --tests tests/gpu/test_expected_vault.py \
  --skip-done docs/runs/s14/e-2xh200-vault-mutation/mutation-vault.jsonl ${MORE_VAULT_DONE:-} --done-at .device-tools/gv-old \
  --seed 15 --mutant-timeout-s 90 --budget-s $((T-SECONDS-110)) --results "$L/mutation-vault.jsonl" ) &
step gpu-mutation $T python3 -m bench.gpu_mutation run .device-tools/gm --gpus $GM --slots-per-gpu 7 \
  --skip-done "${DONE[@]}" --done-at .device-tools/gm-old --first "$(cat .device-tools/gm/first.txt)" \
  --seed 16 --mutant-timeout-s 150 --budget-s $((T-160)) --results "$L/gpu-mutation.jsonl"
wait
cat "$L/rc.txt"; tail -n 4 "$L"/mutation-vault.log "$L"/gpu-mutation.log
date -u
pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
tar -C "$OUT" -czf "$OUT/s15${CALL:-b}-logs.tgz" logs && rm -rf "$L"; true
