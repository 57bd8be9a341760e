"""Where the CUDA headers come from, and what the allowed ones can reach."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cuda_llm.engine.compile import headers as header_search
from cuda_llm.engine.compile import nvrtc_library
from cuda_llm.engine.compile.includes import ALLOWED_HEADER_FAMILIES, ALLOWED_HEADERS, is_allowed_header
from cuda_llm.engine.compile.nvrtc import compile_in_process
from tests.compile.attacks import K
from tests.compile.conftest import needs_nvrtc


@pytest.fixture
def no_pathfinder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make cuda-pathfinder find nothing, so the other places are what is tested."""
    pathfinder = pytest.importorskip("cuda.pathfinder")
    monkeypatch.setattr(pathfinder, "find_nvidia_header_directory", lambda name: None)


def _fake_toolkit(root: Path, *, headers: tuple[str, ...] = header_search._COMPLETE) -> Path:
    """A CUDA 13 style include folder holding empty `headers` (CCCL's under include/cccl)."""
    include = root / "include"
    (include / "cccl").mkdir(parents=True)
    for name in headers:
        path = include / ("cccl/" + name if name.startswith(("cuda/", "nv/")) else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("// fake\n")
    return include


@needs_nvrtc
def test_bundled_headers_are_extracted_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib, version = nvrtc_library.load(), nvrtc_library.version()
    if version < header_search.BUNDLED_HEADERS_SINCE:
        pytest.skip(f"NVRTC {version} has no bundled headers")
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path))
    found = header_search.install_bundled_headers(lib, version)
    target = tmp_path / "cache" / f"nvrtc-headers-{version[0]}.{version[1]}"
    assert found is not None and found.dirs == (target, target / "cccl")
    assert (target / "cuda_fp16.h").is_file()
    assert (target / "cccl" / "cuda" / "std" / "cstdint").is_file()
    stamp = (target / "cuda_fp16.h").stat().st_mtime_ns
    assert header_search.install_bundled_headers(lib, version) == found
    assert (target / "cuda_fp16.h").stat().st_mtime_ns == stamp  # skipped: already there
    (target / "cuda_fp16.h").unlink()  # an extraction cut short
    assert header_search.install_bundled_headers(lib, version) == found
    assert (target / "cuda_fp16.h").is_file()


def test_no_bundle_before_nvrtc_13_3() -> None:
    class OldNvrtc:  # cuda-bindings 13.3 on NVRTC 13.0: the function exists, the bundle does not
        def nvrtcInstallBundledHeaders(self, *args: object) -> None:
            raise AssertionError("must not be called")

    assert header_search.install_bundled_headers(OldNvrtc(), (13, 0)) is None


def test_toolkit_headers_from_cuda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pathfinder: None) -> None:
    include = _fake_toolkit(tmp_path / "cuda")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    found = header_search.find_toolkit_headers()
    assert found is not None
    assert found.dirs == (include, include / "cccl")
    assert "CUDA_HOME" in found.origin


def test_empty_and_partial_folders_are_passed_over_for_a_complete_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = _fake_toolkit(tmp_path / "empty", headers=())
    # What cuda-pathfinder finds on the GPU image: a runtime wheel's folder, no CCCL, no crt/.
    partial = _fake_toolkit(tmp_path / "wheel", headers=("cuda_fp16.h", "cooperative_groups.h"))
    complete = _fake_toolkit(tmp_path / "toolkit")
    places = [(empty, "empty"), (partial, "wheel"), (complete, "toolkit")]
    monkeypatch.setattr(header_search, "toolkit_include_candidates", lambda: iter(places))
    found = header_search.find_toolkit_headers()
    assert found is not None and found.dirs == (complete, complete / "cccl")
    assert header_search.missing_headers(found.dirs) == ()

    monkeypatch.setattr(header_search, "toolkit_include_candidates", lambda: iter(places[:2]))
    fallback = header_search.find_toolkit_headers()  # better than none: cuda_fp16.h works
    assert fallback is not None and fallback.dirs[0] == partial
    assert "without crt/mma.h, cuda/std/cstdint, nv/target" in fallback.origin


def test_the_places_searched_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pathfinder: None) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "path"))
    places = [str(p) for p, _ in header_search.toolkit_include_candidates()]
    assert places[:3] == [
        str(tmp_path / "home" / "include"),
        str(tmp_path / "path" / "include"),
        "/usr/local/cuda/include",
    ]
    assert any(p.endswith("nvidia/cu13/include") for p in places[3:])


@needs_nvrtc
def test_without_headers_only_sources_that_include_something_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(header_search, "find_headers", lambda lib, version: None)
    result = compile_in_process("#include <cuda_fp16.h>\n" + K, "sm_90")
    assert not result.ok
    assert result.error == ("no CUDA headers found: install nvidia-cuda-nvrtc>=13.3 or set CUDA_HOME")
    assert compile_in_process(K, "sm_90").ok


# -- what the allowed headers reach -----------------------------------------------------------------

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
# `#include MACRO(...)`: a header whose macros a candidate could define first (thrust has them).
_COMPUTED = re.compile(r"^[ \t]*#[ \t]*(?:include[ \t]+[A-Za-z_]|include_next\b)", re.M)


def _allowed_in(dirs: tuple[Path, ...]) -> list[str]:
    names = set(ALLOWED_HEADERS)
    for _, pattern in ALLOWED_HEADER_FAMILIES:
        folder = pattern.pattern.split("/[")[0]
        for root in dirs:
            if (root / folder).is_dir():
                names |= {f"{folder}/{p.name}" for p in (root / folder).iterdir() if p.is_file()}
    return sorted(n for n in names if is_allowed_header(n))


def _reach_computed_includes(dirs: tuple[Path, ...], starts: list[str]) -> list[str]:
    """Every computed include in the files the allowed headers can reach (all #if branches)."""

    def resolve(name: str, quote: str, here: Path) -> Path | None:
        for folder in ([here] if quote == '"' else []) + list(dirs):
            if (folder / name).is_file():
                return (folder / name).resolve()
        return None

    todo = [p for n in starts if (p := resolve(n, "<", dirs[0])) is not None]
    seen: set[Path] = set()
    found: list[str] = []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = path.read_text(errors="replace")
        found += [f"{path}: {m.group(0).strip()}" for m in _COMPUTED.finditer(text)]
        for quote, name in _INCLUDE.findall(text):
            target = resolve(name, quote, path.parent)
            if target is not None:
                todo.append(target)
    assert len(seen) > len(starts) / 2  # the walk did find the headers
    return found


def _header_dirs(kind: str) -> tuple[str, tuple[Path, ...]]:
    if kind == "toolkit":
        found = header_search.find_toolkit_headers()
    else:
        if nvrtc_library.version() < header_search.BUNDLED_HEADERS_SINCE:
            pytest.skip("this NVRTC has no bundled headers")
        found = header_search.install_bundled_headers(nvrtc_library.load(), nvrtc_library.version())
    if found is None:
        pytest.skip(f"no {kind} headers here")
    return found.origin, found.dirs


@pytest.mark.parametrize("kind", [pytest.param("bundled", marks=needs_nvrtc), "toolkit"])
def test_allowed_headers_reach_no_computed_include(kind: str) -> None:
    """A computed include (#include MACRO) inside an allowed header could be steered by macros the
    candidate defines first; none may be reachable from the allow list."""
    origin, dirs = _header_dirs(kind)
    starts = _allowed_in(dirs)
    assert "cuda_fp16.h" in starts and any(s.startswith("cuda/std/") for s in starts)
    assert _reach_computed_includes(dirs, starts) == [], origin
