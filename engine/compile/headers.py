"""Where the allowed CUDA headers come from: NVRTC's own bundle, or a CUDA toolkit's include folder.

NVRTC 13.3 and newer carry the CUDA headers and CCCL inside libnvrtc-builtins; they are extracted
once per NVRTC version into the user's cache, so `pip install nvidia-cuda-nvrtc` is all a machine
needs. Older NVRTC (13.0 on the GPU image) has no bundle, so the toolkit's headers are used.
Sources that include nothing compile either way.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_llm.engine.core.paths import user_cache_dir

NO_HEADERS_MESSAGE = "no CUDA headers found: install nvidia-cuda-nvrtc>=13.3 or set CUDA_HOME"
# nvrtcInstallBundledHeaders first shipped in NVRTC 13.3.
BUNDLED_HEADERS_SINCE = (13, 3)
# A folder counts as CUDA headers only if it has this; an empty `include/` proves nothing.
_MARKER = "cuda_fp16.h"
# What the allow list needs. A CUDA runtime wheel's include folder has cuda_fp16.h but not CCCL or
# crt/mma.h (cuda-pathfinder points at one on the GPU image), so such a folder is used only when
# nothing complete is found.
_COMPLETE = ("cuda_fp16.h", "cooperative_groups.h", "crt/mma.h", "cuda/std/cstdint", "nv/target")


@dataclass(frozen=True)
class HeaderDirs:
    dirs: tuple[Path, ...]  # passed as -I, in this order
    origin: str  # for `doctor` and logs: "NVRTC 13.5 bundled headers", "CUDA toolkit (...)"


def bundled_headers_dir(version: tuple[int, int]) -> Path:
    return user_cache_dir() / f"nvrtc-headers-{version[0]}.{version[1]}"


def _with_cccl(include: Path) -> tuple[Path, ...]:
    # CUDA 13 moved libcu++/CUB (cuda/std/..., cub/...) into include/cccl; CUDA 12 kept them in
    # include/ itself.
    cccl = include / "cccl"
    return (include, cccl) if cccl.is_dir() else (include,)


def install_bundled_headers(nvrtc: Any, version: tuple[int, int]) -> HeaderDirs | None:
    """Extract NVRTC's bundled headers (once: later calls find them in place), or None when this
    NVRTC has no bundle or the cache folder cannot be written."""
    install = getattr(nvrtc, "nvrtcInstallBundledHeaders", None)
    if install is None or version < BUNDLED_HEADERS_SINCE:
        return None
    target = bundled_headers_dir(version)
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # NVRTC serialises concurrent installs with a file lock, so warm workers starting together
        # are safe; SKIP_IF_EXISTS makes every later start a cheap check of the version marker.
        result = install(str(target).encode(), nvrtc.NVRTC_INSTALL_HEADERS_SKIP_IF_EXISTS)
        if result[0] == ok and not (target / _MARKER).is_file():
            # A marker without the files (an extraction killed half-way, a cleaned cache).
            result = install(str(target).encode(), nvrtc.NVRTC_INSTALL_HEADERS_FORCE_OVERWRITE)
    except (OSError, RuntimeError):  # RuntimeError: the binding has it, the library does not
        return None
    if result[0] != ok or not (target / _MARKER).is_file():
        return None
    return HeaderDirs(_with_cccl(target), f"NVRTC {version[0]}.{version[1]} bundled headers")


def _site_packages() -> Iterator[Path]:
    seen: set[str] = set()
    try:
        extra = [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # some embedded interpreters lack these
        extra = []
    for entry in [*sys.path, *extra]:
        if entry and entry not in seen:
            seen.add(entry)
            yield Path(entry)


def toolkit_include_candidates() -> Iterator[tuple[Path, str]]:
    """Include folders that may hold the CUDA headers, most specific first."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
        if found:
            yield Path(found), "cuda-pathfinder"
    except Exception:  # an old pathfinder, or none: the other places still count
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            yield Path(value) / "include", var
    yield Path("/usr/local/cuda/include"), "/usr/local/cuda"
    for sp in _site_packages():
        yield sp / "nvidia" / "cu13" / "include", "nvidia-cu13 wheel"
        yield sp / "nvidia" / "cuda_runtime" / "include", "nvidia-cuda-runtime wheel"


def missing_headers(dirs: tuple[Path, ...]) -> tuple[str, ...]:
    """Which of the headers the allow list needs none of `dirs` holds."""
    return tuple(name for name in _COMPLETE if not any((d / name).is_file() for d in dirs))


def find_toolkit_headers() -> HeaderDirs | None:
    """The first complete include folder; failing that, the first with any CUDA headers."""
    partial: HeaderDirs | None = None
    for include, how in toolkit_include_candidates():
        if not (include / _MARKER).is_file():
            continue
        dirs = _with_cccl(include)
        missing = missing_headers(dirs)
        if not missing:
            return HeaderDirs(dirs, f"CUDA toolkit headers at {include} ({how})")
        if partial is None:
            partial = HeaderDirs(dirs, f"CUDA headers at {include} ({how}), without {', '.join(missing)}")
    return partial


@functools.cache
def find_headers(nvrtc: Any, version: tuple[int, int]) -> HeaderDirs | None:
    """The include folders for this process's NVRTC, or None when there are none (compiling a
    source that includes nothing still works). Cached: the answer cannot change mid-process."""
    return install_bundled_headers(nvrtc, version) or find_toolkit_headers()


def neutral_names(dirs: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(a working folder, the include folders relative to it) so that a compile run from that folder
    names no host path: NVRTC writes the -I folder into every `__FILE__` a header expands (a libcu++
    assert's file name lands in the PTX and the cubin as bytes, no text scrub can find it) and into
    the options we record. From the parent of the headers' root the names are e.g.
    `nvrtc-headers-13.5/cccl`, which say what they are and nothing of the home folder."""
    if not dirs:
        return os.getcwd(), ()
    real = [os.path.realpath(d) for d in dirs]
    root = os.path.commonpath(real)
    parent = os.path.dirname(root) or root
    return parent, tuple(os.path.relpath(d, parent) for d in real)
