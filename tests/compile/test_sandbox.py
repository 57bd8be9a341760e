"""The compiler process's jail (engine/compile/sandbox.py): past the include policy, NVRTC still
cannot open a host file. Each check runs in a fresh process prepared exactly as a compiler child is
(prepare_child), then compiles a source that never went through the policy."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from pathlib import Path

import pytest

from cuda_llm.engine.compile.pool import CompilerPool
from cuda_llm.engine.compile.sandbox import landlock_abi
from tests.compile.attacks import K, secret_snippets

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(isinstance(ABI, str), reason=f"no sandbox on this kernel: {ABI}")
MARKER = f"sk-cuda-llm-sandbox-{uuid.uuid4().hex}"


def _unchecked_compile(source: str, headers: tuple[str, ...], confined: bool, queue) -> None:
    """In a spawned child: prepared as a compiler child (confined or not), then NVRTC compiles
    `source` with no policy check; puts (sandbox status, log, what Python itself could read)."""
    from cuda_llm.engine.compile import nvrtc, sandbox, worker
    from cuda_llm.engine.compile.source import CheckedSource
    from cuda_llm.engine.settings import CompileSettings

    settings = CompileSettings()
    if confined:
        info = worker.prepare_child(settings, os.getppid())
    else:
        info = nvrtc.warm_up()
        info["sandbox"] = (False, "not confined (control)")
    del sandbox
    result = nvrtc.compile_checked(CheckedSource(source, headers), "sm_90", settings)
    reads = []
    for path in ("/etc/passwd", "/proc/self/environ"):
        try:
            with open(path, "rb") as f:
                reads.append(f.read().decode(errors="replace"))
        except OSError as exc:
            reads.append(f"refused: {exc.strerror}")
    queue.put((info["sandbox"], result.log, result.ok, reads))


@pytest.fixture(autouse=True)
def key_in_the_environment(monkeypatch):
    """The children start with a key in their environment: what /proc/self/environ would show."""
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)


def run_child(source: str, confined: bool = True, headers: tuple[str, ...] = ()):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_unchecked_compile, args=(source, headers, confined, queue))
    child.start()
    try:
        return queue.get(timeout=120)
    finally:
        child.join(30)


@needs_landlock
@pytest.mark.parametrize("path", ["/etc/passwd", "/proc/self/environ"])
def test_past_the_policy_the_compiler_still_cannot_open_a_host_file(path):
    (active, detail), log, ok, reads = run_child(f"#include <{path}>\n" + K)
    assert active, detail
    assert not ok and f'cannot open source file "{path}"' in log and "Permission denied" in log
    assert MARKER not in log and not any(
        line in log for line in secret_snippets(__import__("pathlib").Path("/etc/passwd"))
    )
    assert reads == ["refused: Permission denied", "refused: Permission denied"], "Python in the child neither"


@needs_landlock
def test_the_cuda_headers_stay_readable():
    source = "#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n" + K
    (active, _), log, ok, _reads = run_child(source, headers=("cuda_fp16.h", "cooperative_groups.h"))
    assert active and ok, log


def test_the_control_without_the_sandbox_reads_the_file():
    """What the sandbox prevents is real: unconfined, the same compile reads the file."""
    if not secret_snippets(Path("/etc/passwd")):
        pytest.skip("no readable /etc/passwd")
    (active, _), log, _ok, reads = run_child("#include </etc/passwd>\n" + K, confined=False)
    assert not active and "root:" in reads[0] and MARKER in reads[1]
    assert "cannot open source file" not in log  # it was opened (its text is kept out of the log)


@needs_landlock
async def test_the_pool_reports_its_processes_confined():
    async with CompilerPool(workers=1) as pool:
        confined, detail = await pool.sandbox()
    assert confined and "Landlock ABI" in detail
