#!/usr/bin/env bash
# Session 16, call B (4 x H200, the machine of call A while warm): Ray 2.60.0 from the two halves
# carried by calls A and B; the five-task bench on 1/2/4 GPUs, the Ray GPU test, the round of 8
# locally and through Ray on the same GPUs; then the mutation run goes on over every GPU.
source "$(dirname "$0")/common.sh"
T=${LIMIT:-565}
W=/tmp/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
if [ -f .whl/a/ray.part-aa ] && [ -f .whl/b/ray.part-ab ]; then
  cat .whl/a/ray.part-aa .whl/b/ray.part-ab > $W
  echo "$(cut -d' ' -f1 .whl/b/ray.sha256)  $W" | sha256sum -c && python3 -m pip install -q --no-index --no-deps --no-compile $W
else echo "a half of Ray's wheel is missing: .whl/a (call A's carry) or .whl/b"; fi
python3 -c "import ray; print('ray', ray.__version__)" 2>&1 | tail -1 | tee "$L/ray.txt"
step round-tasks 220 python3 -m bench.round_tasks --gpus 1,2,4 --repeats 1 --programs --json "$L/round_tasks.json" --md "$L/round_tasks.md"
if grep -q "^ray 2" "$L/ray.txt"; then
  step pytest-ray-gpu 120 python3 -m pytest -m gpu -v -n0 "${opts[@]}" tests/cluster/test_gpu_cluster.py
  step round-cluster 200 python3 -m bench.round_gpus --gpus 1,2,4 --repeats 3 --programs --cluster --json "$L/round_cluster.json" --md "$L/round_cluster.md"
  ray stop --force > /dev/null 2>&1
fi
gm gpu-mutation $((T-SECONDS)) $(seq -s, 0 $LAST)
finish s16b
