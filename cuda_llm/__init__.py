"""cuda-llm: a language model writes CUDA kernels and the GPU proves them right and fast.

Everything is installed under this one name (`cuda_llm.engine`, `cuda_llm.app`, `cuda_llm.tasks`,
`cuda_llm.themes`), so no top-level `engine` or `app` of ours can clash with another package's.

In the repository the subpackages stay at the top (engine/, app/, tasks/, themes/) and setup.py maps
them under this name when installing. Run from a checkout instead (`python -m pytest`, PYTHONPATH
set to the repository), this package finds them beside itself: its search path gains the
repository root, the standard mechanism behind `pkgutil.extend_path`.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_here = Path(__file__).resolve().parent
if not (_here / "engine").is_dir() and (_here.parent / "engine" / "__init__.py").is_file():
    __path__.append(str(_here.parent))
