"""The compiler process's jail (engine/compile/sandbox.py): with the text policy switched off, NVRTC in
a real compiler child still cannot open a host file.

Each check starts a compiler child exactly as the pool does (worker.child_main: NVRTC warmed, the
jail entered, then requests over the pipe), except that the include policy is switched off inside
it, so every source reaches NVRTC as written. The children carry a marker key in their environment:
what /proc/self/environ would show. Where a mechanism is not available on this machine, its tests
skip and say why (the GPU machines run a kernel of their own)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from cuda_llm.engine.compile.compiler_pool import CompilerPool
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.compile.sandbox import landlock_abi
from cuda_llm.engine.core.settings import CompileSettings
from tests.compile.attacks import K, secret_snippets
from tests.compile.jail import PolicyFreeCompiler

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(isinstance(ABI, str), reason=f"no Landlock on this kernel: {ABI}")
MARKER = f"sk-cuda-llm-sandbox-{uuid.uuid4().hex}"
HEADERS = "#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n#include <cooperative_groups.h>\n"


@pytest.fixture(scope="module")
def planted():
    """A secret outside every header folder, where a world-readable include could reach it."""
    folder = Path(tempfile.mkdtemp(prefix="cuda-llm-planted-"))
    secret = folder / "secret.h"
    secret.write_text(f"{MARKER}-planted\n")
    folder.chmod(0o755)
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def marker_environment():
    old = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = MARKER  # the children inherit it; /proc/self/environ would show it
    yield
    if old is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = old


def compiler(mechanisms: tuple[str, ...], no_chroot: bool = False):
    c = PolicyFreeCompiler(mechanisms, no_chroot)
    if mechanisms and not c.active:
        c.close()
        pytest.skip(f"the {'/'.join(mechanisms)} jail is not available here: {c.detail}")
    return c


@pytest.fixture(scope="module", params=["landlock", "chroot"])
def jailed(request, marker_environment):
    if request.param == "landlock" and isinstance(ABI, str):
        pytest.skip(f"no Landlock on this kernel: {ABI}")
    c = compiler((request.param,))
    yield c
    c.close()


def attacks(planted: Path) -> dict[str, str]:
    """Sources that, unconfined, make NVRTC read a host file (see the control below)."""
    climb = "../" * 24
    return {
        "/etc/passwd": '#include "/etc/passwd"\n',
        "/proc/self/environ": "#include </proc/self/environ>\n",
        "a planted file": f'#include "{planted}"\n',
        "a planted file by #include_next": f'#include_next "{planted}"\n',
        "a relative climb from the header folder": f'#include "{climb}proc/self/environ"\n',
        "a relative climb to the planted file": f'#include "{climb}{str(planted).lstrip("/")}"\n',
    }


def leaked(result: CompileResult, planted: Path) -> list[str]:
    text = "\n".join([result.log, result.error or "", repr(result.diagnostics), result.ptx or ""])
    lines = [MARKER, *secret_snippets(Path("/etc/passwd")), *secret_snippets(planted)]
    return [line for line in lines if line in text]


@pytest.mark.parametrize(
    "name",
    [
        "/etc/passwd",
        "/proc/self/environ",
        "a planted file",
        "a planted file by #include_next",
        "a relative climb from the header folder",
        "a relative climb to the planted file",
    ],
)
def test_a_jailed_compiler_opens_no_host_file_even_without_the_policy(jailed, planted, name):
    result = jailed.compile(attacks(planted)[name] + K)
    assert not result.ok
    assert not leaked(result, planted)
    assert "cannot open source file" in result.log, result.log


def test_a_jailed_compiler_cannot_tell_whether_a_host_file_exists(jailed, planted):
    for path in (planted, "/etc/passwd", "/proc/self/environ", "/no/such/file.h"):
        result = jailed.compile(f"#if __has_include(<{path}>)\n#error EXISTS\n#endif\n" + K)
        assert result.ok and "EXISTS" not in result.log, (path, result.log)


def _includes(headers) -> str:
    return "".join(f"#include <{h}>\n" for h in headers) + K


@pytest.fixture(scope="module")
def headers_this_toolkit_has():
    """The allow list (and members of its families) as far as this NVRTC's headers have them: an older
    toolkit lacks some (CUDA 13.0's has no cuda/access_property, which NVRTC 13.5's bundle has), and
    what no folder holds is no jail's doing. Decided by an unconfined compiler, one header at a time
    only when the whole set does not compile."""
    from cuda_llm.engine.compile.includes import ALLOWED_HEADERS

    every = [*sorted(ALLOWED_HEADERS), "cuda/std/cstdint", "cuda/std/limits", "cooperative_groups/reduce.h"]
    c = compiler(())
    try:
        if c.compile(_includes(every)).ok:
            return every
        present = [h for h in every if c.compile(_includes([h])).ok]
    finally:
        c.close()
    assert len(present) >= len(every) // 2, f"this toolkit compiles only {present}"
    return present


def test_a_jailed_compiler_still_reads_the_cuda_headers(jailed, headers_this_toolkit_has):
    """Every header of the allow list that this toolkit has, all in one kernel: what they reach lies
    beneath the header folders, so the jail takes none of them away."""
    result = jailed.compile(_includes(headers_this_toolkit_has))
    assert jailed.active and result.ok, result.log


def test_what_a_jail_allows_is_said(jailed):
    mechanism = jailed.info["sandbox_mechanism"]
    assert mechanism in ("landlock", "chroot")
    assert ("Landlock ABI" if mechanism == "landlock" else "chroot jail:") in jailed.detail
    assert "CUDA header folder" in jailed.detail


def test_the_control_without_a_jail_reads_the_host_files(marker_environment, planted):
    """What the jail prevents is real: unconfined, the same sources are read (the compile log keeps
    no line of another file: engine/compile/log.py; a file's errors are what give it away)."""
    c = compiler(())
    try:
        assert not c.active and "switched off" in c.detail
        for name, source in attacks(planted).items():
            result = c.compile(source + K)
            assert "cannot open source file" not in result.log, (name, result.log)
            assert not leaked(result, planted), name
        probe = f"#if __has_include(<{planted}>)\n#error EXISTS\n#endif\n" + K
        assert "EXISTS" in c.compile(probe).log  # existence leaks without a jail
    finally:
        c.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the test takes the right to chroot away from root")
def test_a_compiler_that_may_not_chroot_jails_itself_in_a_user_namespace(marker_environment, planted):
    """No Landlock and no right to chroot (not root): the chroot comes from a new user namespace."""
    c = compiler(("chroot",), no_chroot=True)
    try:
        assert c.info["sandbox_mechanism"] == "chroot" and "chroot in a user namespace jail" in c.detail
        assert c.compile(HEADERS + K).ok
        for name, source in attacks(planted).items():
            result = c.compile(source + K)
            assert not result.ok and not leaked(result, planted), name
    finally:
        c.close()


async def test_the_pool_says_whether_its_processes_are_jailed():
    async with CompilerPool(workers=1) as pool:
        confined, detail = await pool.sandbox()
    if not confined:
        pytest.skip(f"no jail on this machine: {detail}")
    assert "Landlock ABI" in detail or "jail: the compiler sees only" in detail


async def test_an_unjailed_compiler_is_announced_loudly():
    """Where no jail works, `doctor` and every session's notice say so (here: switched off)."""
    from cuda_llm.app.cli.doctor_cmd import check_sandbox
    from cuda_llm.engine.judge.judge_environment import sandbox_warning

    pool = CompilerPool(CompileSettings(sandbox=()), workers=1)
    try:
        warning = await sandbox_warning(pool)
    finally:
        pool.close()
    assert warning is not None and warning.startswith("WARNING: the compiler is not sandboxed")
    check = await check_sandbox(CompileSettings(sandbox=()))
    assert check.status == "warn" and check.detail.startswith("NOT ACTIVE: switched off")


@needs_landlock
async def test_doctor_reports_an_active_jail():
    from cuda_llm.app.cli.doctor_cmd import check_sandbox

    check = await check_sandbox()
    assert check.status == "ok" and "Landlock ABI" in check.detail


def _confine_with_a_failing_proof(folder: str, queue) -> None:
    from cuda_llm.engine.compile import sandbox

    cwd = os.getcwd()
    status = sandbox.confine([folder], lambda dirs: "broken on purpose", ("chroot",))
    queue.put((status, os.path.exists("/etc/passwd"), os.getcwd() == cwd))


def test_a_chroot_that_breaks_compiling_is_undone(tmp_path):
    """A jail that fails its proof (here a self test that always fails) is left again: the process
    runs unconfined, says why, and finds the host where it was."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_confine_with_a_failing_proof, args=(str(tmp_path), queue))
    child.start()
    try:
        status, host_visible, same_cwd = queue.get(timeout=60)
    finally:
        child.join(10)
    if "refused" in status.detail or "no user namespace" in status.detail:
        pytest.skip(f"no chroot here: {status.detail}")
    assert not status.active and "tried and undone: broken on purpose" in status.detail
    assert host_visible and same_cwd and status.include_dirs == (str(tmp_path),)
