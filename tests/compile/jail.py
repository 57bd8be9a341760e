"""A compiler child with the include policy switched off, for proving the jail alone
(engine/compile/sandbox.py): tests/compile/test_sandbox.py and the host-safety faults use it."""

from __future__ import annotations

import multiprocessing
import os

from cuda_llm.engine.compile import compiler_process as worker
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.core.settings import CompileSettings

CAP_SYS_CHROOT = 18


def _drop_chroot_capability() -> None:
    """Take CAP_SYS_CHROOT out of this process's effective and permitted sets (capset(2)): from then
    on it may not chroot, as a process that is not root may not."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))

    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    assert libc.capget(ctypes.byref(header), data) == 0
    data[0].effective &= ~(1 << CAP_SYS_CHROOT)
    data[0].permitted &= ~(1 << CAP_SYS_CHROOT)
    assert libc.capset(ctypes.byref(header), data) == 0, ctypes.get_errno()


def _child_without_policy(conn, settings: CompileSettings, parent_pid: int, no_chroot: bool) -> None:
    """A compiler child whose include policy accepts anything (and says it includes <cuda_fp16.h>, so
    NVRTC searches the header folders too): what it may open is the jail's alone to decide. With
    `no_chroot`, the process loses the right to chroot just before it jails itself."""
    from cuda_llm.engine.compile import sandbox, source

    source.check_source_policy = lambda text: ("cuda_fp16.h",)
    if no_chroot:
        confine = sandbox.confine

        def confine_unprivileged(*args, **kwargs):
            _drop_chroot_capability()
            return confine(*args, **kwargs)

        sandbox.confine = confine_unprivileged
    worker.child_main(conn, settings, parent_pid)


class PolicyFreeCompiler:
    """The parent's end of one such child, speaking the pool's protocol (worker.CompilerProcess)."""

    def __init__(self, mechanisms: tuple[str, ...], no_chroot: bool = False) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child_end = ctx.Pipe(duplex=True)
        settings = CompileSettings(sandbox=mechanisms)
        self.process = ctx.Process(target=_child_without_policy, args=(child_end, settings, os.getpid(), no_chroot))
        self.process.start()
        child_end.close()
        assert self.conn.poll(120), "the compiler child did not start"
        kind, self.info = self.conn.recv()
        assert kind == "ready", self.info
        self.active, self.detail = self.info["sandbox"]

    def compile(self, source: str) -> CompileResult:
        self.conn.send((source, "sm_90"))
        assert self.conn.poll(120)
        kind, payload = self.conn.recv()
        assert kind == "result", payload
        return payload

    def close(self) -> None:
        self.conn.send(None)
        self.process.join(10)
