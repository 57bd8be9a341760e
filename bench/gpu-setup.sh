#!/usr/bin/env bash
# On the GPU machine (no network): install the project's missing Python dependencies from the
# folder of wheels downloaded on a machine that has one, leaving the image's own packages
# (numpy, cuda-bindings, NVRTC, nvidia-ml-py, pytest, rich...) as they are.
#   source bench/gpu-setup.sh [.device-wheels]
dir=${1:-.device-wheels}
# Which wheels are not installed yet, asked of one Python process: a `pip show` per wheel costs a
# second or more each (74 wheels took 2-4 minutes of device time on every call).
mapfile -t missing < <(python3 - "$dir" <<'PY'
import importlib.metadata as m, pathlib, re, sys
have = {re.sub(r"[-_.]+", "-", d.metadata["Name"] or "").lower() for d in m.distributions()}
for whl in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    if re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower() not in have:
        print(whl)
PY
)
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
