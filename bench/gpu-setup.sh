#!/usr/bin/env bash
# On the GPU machine (no network): install the project's missing Python dependencies from the
# folder of wheels downloaded on a machine that has one, leaving the image's own packages
# (numpy, cuda-bindings, NVRTC, nvidia-ml-py, pytest, rich...) as they are.
#   source bench/gpu-setup.sh [.device-wheels]
dir=${1:-.device-wheels}
missing=()
for whl in "$dir"/*.whl; do
  name=$(basename "$whl" | cut -d- -f1)
  python3 -m pip show -q "${name//_/-}" >/dev/null 2>&1 || missing+=("$whl")
done
if [ ${#missing[@]} -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile "${missing[@]}" 2>&1 | grep -v "^WARNING" || true
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 - <<'PY'
import importlib.metadata as m
for d in ("cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-ml-py", "numpy", "textual", "ollama", "openai", "pytest-asyncio", "rich"):
    try:
        print(f"{d} {m.version(d)}", end="; ")
    except m.PackageNotFoundError:
        print(f"{d} MISSING", end="; ")
print()
PY
