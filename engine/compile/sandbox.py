"""The compiler process's jail: once NVRTC is loaded and warmed, the process can open no file but
the CUDA headers, whatever the source it compiles says.

The include policy (engine/compile/includes.py) reads the source as the preprocessor would, but a
lexer that differs from the compiler's in one corner is a way around it, and whatever the compiler
reads can come back in its log and travel to a model on someone else's server. So the operating
system has the last word: the compiler child restricts itself with Landlock (Linux 5.13 and later,
no privileges needed) after NVRTC and its builtins are loaded and the bundled headers extracted, and
before it takes its first request. From then on the process may read files and list folders only
beneath the CUDA header folders; opening anything else (/etc/passwd, /proc/self/environ, the
user's home) fails, as does writing, creating, executing or connecting anywhere.

Why Landlock and not seccomp: the compiler must still open the allowed headers, and seccomp can
judge a system call only by its numbers, not by the path a pointer argument names; it could only
forbid every open. Landlock grants access by folder, which is exactly the rule wanted here.

Where the kernel has no Landlock (older kernels, kernels built without it, some container
sandboxes), the process runs unconfined and says so: `doctor` prints the reason, and every session
starts with a warning. The restriction applies to the thread that compiles (the child compiles on
its main thread; threads started later inherit it).
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# System call numbers: the same in the generic table (arm64, riscv64) and on x86-64.
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "riscv64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights Landlock knows, by the ABI version that introduced them. Handling every one of
# them means denying every one not granted.
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # ..., REFER, TRUNCATE, IOCTL_DEV
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3
_NET_RIGHTS = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets, signals (ABI 6)


@dataclass(frozen=True)
class SandboxStatus:
    active: bool
    detail: str  # what is allowed, or why there is no sandbox: shown by `doctor` and in warnings


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int | str:
    """The kernel's Landlock ABI version, or why there is none."""
    numbers = _SYSCALLS.get(platform.machine())
    if platform.system() != "Linux" or numbers is None:
        return f"Landlock needs Linux on x86-64 or arm64 (this is {platform.system()} {platform.machine()})"
    libc = _libc()
    abi = libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 0:
        err = ctypes.get_errno()
        return f"the kernel offers no Landlock ({os.strerror(err)}; kernel {platform.release()})"
    return int(abi)


def confine(readable: Sequence[Path]) -> SandboxStatus:
    """Restrict this thread, and any it starts, to reading beneath `readable` (and nothing else).
    Irreversible. Returns what was done, or why nothing could be."""
    abi = landlock_abi()
    if isinstance(abi, str):
        return SandboxStatus(False, abi)
    create, add_rule, restrict = _SYSCALLS[platform.machine()]
    libc = _libc()
    fs = sum(bits for version, bits in _FS_RIGHTS_BY_ABI.items() if abi >= version)
    attr = _RulesetAttr(fs, _NET_RIGHTS if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct as this kernel knows it
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return SandboxStatus(False, f"Landlock refused a ruleset ({os.strerror(ctypes.get_errno())})")
    try:
        granted = []
        for folder in readable:
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that is not there grants nothing
            try:
                rule = _PathBeneathAttr(_READ_FILE | _READ_DIR, fd)
                if (
                    libc.syscall(
                        add_rule,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                    < 0
                ):
                    return SandboxStatus(
                        False, f"Landlock refused a rule for {folder} ({os.strerror(ctypes.get_errno())})"
                    )
                granted.append(str(folder))
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return SandboxStatus(False, f"could not set no_new_privs ({os.strerror(ctypes.get_errno())})")
        if libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return SandboxStatus(False, f"Landlock refused to restrict the process ({os.strerror(ctypes.get_errno())})")
    finally:
        os.close(ruleset)
    where = f"{len(granted)} CUDA header folder(s)" if granted else "nothing (no headers)"
    return SandboxStatus(True, f"Landlock ABI {abi}: the compiler may read only {where}")
