"""The compiler process's jail: once NVRTC is loaded and warmed, the process can open no file but
the CUDA headers, whatever the source it compiles says.

The include policy (engine/compile/includes.py) reads the source as the preprocessor would, but a
lexer that differs from the compiler's in one corner is a way around it, and whatever the compiler
reads can come back in its log and travel to a model on someone else's server. So the operating
system has the last word. After NVRTC and its builtins are loaded and the bundled headers extracted,
and before the first request, the compiler child shuts itself in with the first mechanism that works:

1. Landlock (Linux 5.13 and later, no privileges needed): the process may read files and list
   folders only beneath the CUDA header folders; opening anything else (/etc/passwd,
   /proc/self/environ, the user's home) fails, as do writing, creating, executing and TCP.
2. Where the kernel has no Landlock (older kernels, kernels built without it, gVisor): a chroot into
   the header folder, from inside a new user namespace when the process is not root. Every absolute
   path then resolves inside the header folder, and nothing of the host (no /etc, no /proc) is
   there. It does not stop network use, which NVRTC never attempts.

Why not seccomp: the compiler must still open the allowed headers, and a seccomp filter judges a
system call only by its numbers, never by the path a pointer argument names; it could only forbid
every open, and with it every header.

Each mechanism is proved before it counts: the process compiles a probe that includes a CUDA header
and checks that host files (/proc/self/environ, /etc/passwd, the home folder) no longer open. A chroot
that fails the proof is undone; where nothing works the process runs unconfined and says so
(`doctor`, and a warning in front of every session). The restriction applies to the thread that
compiles (the child compiles on its main thread; threads started later inherit it).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import platform
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# System call numbers: the same in the generic table (arm64, riscv64) and on x86-64.
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "riscv64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWUSER = 0x10000000

# Filesystem rights Landlock knows, by the ABI version that introduced them. Handling every one of
# them means denying every one not granted.
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # ..., REFER, TRUNCATE, IOCTL_DEV
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3
_NET_RIGHTS = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets, signals (ABI 6)

# Host files a jailed process must not be able to open: what a hostile include reaches for first
# (and the home folder, see probe_paths).
PROBE_PATHS: tuple[str, ...] = ("/proc/self/environ", "/etc/passwd")

# Given the header folders as the confined process names them: None when a compile works, else why not.
SelfTest = Callable[[tuple[str, ...]], str | None]


@dataclass(frozen=True)
class SandboxStatus:
    active: bool
    detail: str  # what is allowed, or why there is no sandbox: shown by `doctor` and in warnings
    mechanism: str = "none"  # "landlock", "chroot" or "none"
    # The header folders as the confined process must name them (a chroot moves them to "/."):
    include_dirs: tuple[str, ...] = ()


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


def _errno_text() -> str:
    return os.strerror(ctypes.get_errno())


def landlock_abi() -> int | str:
    """The kernel's Landlock ABI version, or why there is none."""
    numbers = _SYSCALLS.get(platform.machine())
    if platform.system() != "Linux" or numbers is None:
        return f"Landlock needs Linux on x86-64 or arm64 (this is {platform.system()} {platform.machine()})"
    libc = _libc()
    abi = libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 0:
        return f"the kernel offers no Landlock ({_errno_text()}; kernel {platform.release()})"
    return int(abi)


def probe_paths() -> tuple[str, ...]:
    """PROBE_PATHS and the user's home folder (unless it is the root folder itself)."""
    with contextlib.suppress(RuntimeError, KeyError):  # no HOME and no passwd entry
        home = str(Path.home())
        if home != "/":
            return (*PROBE_PATHS, home)
    return PROBE_PATHS


def host_files_open(paths: Sequence[str]) -> list[str]:
    """Which of `paths` this process can open (none, once it is jailed)."""
    opened = []
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        os.close(fd)
        opened.append(path)
    return opened


def _no_new_privs(libc: ctypes.CDLL) -> str | None:
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"could not set no_new_privs ({_errno_text()})"
    return None


def _landlock(folders: Sequence[str]) -> SandboxStatus:
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
        return SandboxStatus(False, f"Landlock refused a ruleset ({_errno_text()})")
    try:
        granted = []
        for folder in folders:
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that is not there grants nothing
            try:
                rule = _PathBeneathAttr(_READ_FILE | _READ_DIR, fd)
                args = (ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
                if libc.syscall(add_rule, *args) < 0:
                    return SandboxStatus(False, f"Landlock refused a rule for {folder} ({_errno_text()})")
                granted.append(folder)
            finally:
                os.close(fd)
        problem = _no_new_privs(libc)
        if problem:
            return SandboxStatus(False, problem)
        if libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return SandboxStatus(False, f"Landlock refused to restrict the process ({_errno_text()})")
    finally:
        os.close(ruleset)
    where = f"{len(granted)} CUDA header folder(s)" if granted else "nothing (no headers)"
    return SandboxStatus(True, f"Landlock ABI {abi}: the compiler may read only {where}", "landlock", tuple(folders))


def _jail_names(root: str, folders: Sequence[str]) -> tuple[str, ...]:
    """The folders as seen from inside a chroot at `root`: "/." for the root itself, "/./cccl" for
    a folder beneath it. The "/./" prefix cannot be mistaken for anything else in a compiler log,
    where it is scrubbed off like any include folder (a bare "/" could not be)."""
    names = []
    for folder in folders:
        rel = os.path.relpath(folder, root)
        names.append("/." if rel == "." else "/./" + rel)
    return tuple(names)


def _enter_chroot(libc: ctypes.CDLL, root_fd: int) -> tuple[str | None, str]:
    """chroot into the folder open as `root_fd`; from inside a new user namespace if plain chroot
    is not permitted (not root). Returns (None or why not, how it was done)."""
    how = "chroot"
    try:
        os.fchdir(root_fd)
        os.chroot(".")
    except PermissionError:
        how = "chroot in a user namespace"
        if libc.unshare(_CLONE_NEWUSER) != 0:
            return f"not root, and no user namespace for a chroot ({_errno_text()})", how
        try:
            os.chroot(".")
        except OSError as exc:
            return f"chroot refused in a user namespace ({exc.strerror})", how
    except OSError as exc:
        return f"chroot refused ({exc.strerror})", how
    os.chdir("/")
    return None, how


def _chroot(folders: Sequence[str], paths: Sequence[str], self_test: SelfTest | None) -> SandboxStatus:
    if platform.system() != "Linux":
        return SandboxStatus(False, f"no chroot jail on {platform.system()}")
    real = [os.path.realpath(f) for f in folders if os.path.isdir(f)]
    empty: str | None = None
    if real:
        root = real[0]
        if any(os.path.commonpath([root, f]) != root for f in real):
            return SandboxStatus(False, f"the header folders {', '.join(real)} are not all beneath the first")
    else:  # no headers: the jail is an empty folder, removed once entered
        empty = root = tempfile.mkdtemp(prefix="cuda-llm-jail-")
    libc = _libc()
    problem = _no_new_privs(libc)
    if problem:
        return SandboxStatus(False, problem)
    old_root = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    old_cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if empty is not None:
            os.rmdir(empty)  # the open descriptor keeps it usable as a root
        problem, how = _enter_chroot(libc, root_fd)
        if problem:
            return SandboxStatus(False, problem)
        names = _jail_names(root, real)
        problem = _proof(paths, names, self_test)
        if problem:
            # Undone through the descriptor of the old root, which only this code holds; it is
            # closed below whatever happens, so nothing can climb out later.
            try:
                os.fchdir(old_root)
                os.chroot(".")
                os.fchdir(old_cwd)
            except OSError as exc:
                return SandboxStatus(False, f"a {how} jail failed ({problem}) and could not be undone ({exc})")
            return SandboxStatus(False, f"a {how} jail was tried and undone: {problem}", include_dirs=tuple(folders))
    finally:
        for fd in (old_root, old_cwd, root_fd):
            os.close(fd)
    where = f"{len(real)} CUDA header folder(s)" if real else "an empty folder (no headers)"
    return SandboxStatus(True, f"{how} jail: the compiler sees only {where}", "chroot", names)


def _proof(paths: Sequence[str], include_dirs: tuple[str, ...], self_test: SelfTest | None) -> str | None:
    """None when the jail holds (none of `paths` opens) and, given a self test, a compile works."""
    opened = host_files_open(paths)
    if opened:
        return f"{', '.join(opened)} still open(s)"
    if self_test is not None:
        return self_test(include_dirs)
    return None


def confine(
    readable: Sequence[Path | str],
    self_test: SelfTest | None = None,
    mechanisms: Sequence[str] = ("landlock", "chroot"),
) -> SandboxStatus:
    """Shut this process in (this thread, and any it starts) with the first of `mechanisms` that
    works, so it may read beneath `readable` and nothing else. Irreversible once it reports active.
    Returns what was done, or why nothing could be (each mechanism's reason)."""
    folders = [str(f) for f in readable]
    paths = probe_paths()  # before any jail: the home folder's name comes from the passwd file
    reasons: list[str] = []
    for mechanism in mechanisms:
        if mechanism == "landlock":
            status = _landlock(folders)
            if status.active:
                # Landlock cannot be undone: a failed proof leaves the process restricted but says
                # so. Its rules keep the header folders readable by construction, so no compile is
                # needed to prove it (the chroot below needs one).
                problem = _proof(paths, status.include_dirs, None)
                if problem is None:
                    return status
                return SandboxStatus(False, f"Landlock is on but does not hold: {problem}", include_dirs=tuple(folders))
        elif mechanism == "chroot":
            status = _chroot(folders, paths, self_test)
            if status.active:
                # Say why the first choice was not taken: a reader of `doctor` may fix that.
                why = f" (instead of Landlock: {'; '.join(reasons)})" if reasons else ""
                return dataclasses.replace(status, detail=status.detail + why)
        else:
            raise ValueError(f"unknown sandbox mechanism {mechanism!r} (known: landlock, chroot)")
        reasons.append(status.detail)
    if not reasons:
        return SandboxStatus(False, "switched off (CompileSettings.sandbox is empty)", include_dirs=tuple(folders))
    return SandboxStatus(False, "; ".join(reasons), include_dirs=tuple(folders))
