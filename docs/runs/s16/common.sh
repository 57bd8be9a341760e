# Sourced by each call's script: logs, setup, step(), the mutation results already on record.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u; git rev-parse HEAD 2>/dev/null
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nproc > "$L/host.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s (ended at $SECONDS s)" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
N=$(nvidia-smi -L | wc -l); LAST=$((N-1))
BENCH="tests/torchtask/test_gpu_import.py::test_bench_prints_fast_p_and_a_loop_beats_eager"
EARLIER=(docs/runs/s10/b-4xh100-mutation/gpu-mutation.jsonl
  docs/runs/s11/b-4xh200-mutation/gpu-mutation.jsonl docs/runs/s12/a-4xh200-suite/mutation-killable.jsonl
  docs/runs/s12/c-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/c-1xh200-mutation/mutation-scrub.jsonl
  docs/runs/s12/e-1xh200-mutation/gpu-mutation.jsonl docs/runs/s12/d-2xh200-round/mutation-poison.jsonl
  docs/runs/s13/b-2xh200-counters-mutation/gpu-mutation.jsonl docs/runs/s13/b-2xh200-counters-mutation/mutation-validate16.jsonl
  docs/runs/s13/c-2xh200-mutation/gpu-mutation.jsonl docs/runs/s13/c-2xh200-mutation/mutation-targeted.jsonl)
# This DIR's verdicts so far (session 15's, its timeouts left out so that they run again) plus any
# results of this session's earlier calls that were copied back into .device-tools/done/.
DONE=(.device-tools/s16-done.jsonl $(ls .device-tools/done/gm-*.jsonl 2>/dev/null))
gm() { # gm NAME LIMIT GPUS [extra args]: the mutants of validate/harness/device_compare not yet judged
  local name=$1 limit=$2 gpus=$3; shift 3
  step "$name" "$limit" python3 -m bench.gpu_mutation run .device-tools/gm --gpus "$gpus" --slots-per-gpu 7 \
    --skip-done "${DONE[@]}" --earlier-dir .device-tools/gm-old --earlier-done "${EARLIER[@]}" \
    --seed 17 --mutant-timeout-s 240 --budget-s $((limit-60)) --results "$L/$name.jsonl" "$@"; }
gv() { # gv NAME LIMIT GPUS: the vault's GPU-only mutants not yet judged
  local name=$1 limit=$2 gpus=$3
  step "$name" "$limit" python3 -m bench.gpu_mutation run .device-tools/gv --gpus "$gpus" --slots-per-gpu 8 \
    --only "$(cat .device-tools/gv/gpu-only.txt)" --tests tests/gpu/test_expected_vault.py \
    --skip-done docs/runs/s15/b-4xh200-mutation/mutation-vault.jsonl $(ls .device-tools/done/vault-*.jsonl 2>/dev/null) \
    --earlier-dir .device-tools/gv-old --earlier-done docs/runs/s14/e-2xh200-vault-mutation/mutation-vault.jsonl \
    --seed 17 --mutant-timeout-s 90 --budget-s $((limit-100)) --results "$L/$name.jsonl"; }
finish() { mkdir -p .device-tools/done  # for a later call on this machine while it is warm
  [ -f "$L/gpu-mutation.jsonl" ] && cp "$L/gpu-mutation.jsonl" ".device-tools/done/gm-$1.jsonl"
  [ -f "$L/mutation-vault.jsonl" ] && cp "$L/mutation-vault.jsonl" ".device-tools/done/vault-$1.jsonl"
  cat "$L/rc.txt"; for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 5 "$f"; done
  for f in "$L"/*mutation*.log; do echo "== $f"; tail -n 3 "$f"; done; date -u
  pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null
  tar -C "$OUT" -czf "$OUT/$1-logs.tgz" logs && rm -rf "$L"; true; }
