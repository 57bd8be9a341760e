# Sourced by each call's script: logs, setup, step().
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
L="$OUT/logs"; mkdir -p "$L"
exec > "$L/driver.log" 2>&1 < /dev/null
date -u; git rev-parse HEAD 2>/dev/null
source bench/gpu-setup.sh .device-wheels
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$L/gpus.txt"
nproc > "$L/host.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1 < /dev/null; echo "$name rc=$? in $((SECONDS-t0)) s (ended at $SECONDS s)" >> "$L/rc.txt"; }
opts=(-o "addopts=-ra --strict-markers" -p no:cacheprovider)
finish() { cat "$L/rc.txt"; for f in "$L"/pytest-*.log; do echo "== $f"; tail -n 3 "$f"; done; date -u
  tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"; pkill -9 -f "python3 -m (pytest|bench)|cuda_llm|multiprocessing" 2>/dev/null; true; }
