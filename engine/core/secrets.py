"""Keeping credentials out of every process we start: the GPU worker and the profiler's children run
model-written code, the compiler children compile it, and none of them needs a key.

The GPU worker runs kernels a model wrote. On a machine where the GPU may read the process's pageable
host memory (HMM, or ATS on Grace Hopper), a kernel can read any host address of that process, its
environment block included, and write what it finds into an output that comes back to the model as
numbers in a mismatch report. So the worker starts with no variable that looks like a credential:
it needs none (the model server's key is the engine's, in this process only).
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

# Names of variables that hold credentials by convention: OPENAI_API_KEY, HF_TOKEN, AWS_SECRET_ACCESS_KEY,
# GITHUB_TOKEN, PGPASSWORD, *_CREDENTIALS, SSH_AUTH_SOCK... Matched as words of the name (or a name
# ending in PASSWORD), so CUDA_VISIBLE_DEVICES, MONKEY or TOKENIZERS_PARALLELISM stay.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|COOKIE)(?:_|$)|PASSW(?:OR)?D$", re.I
)


def is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` less every variable whose name marks it as a credential."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}


def scrub_own_environment() -> list[str]:
    """For a child that cannot be started with a chosen environment (multiprocessing's spawn passes the
    parent's as it is): every credential variable's value overwritten in place, where the process's
    initial environment block holds it (what /proc/self/environ reads), then removed. Call it first
    thing in the child, before it reads anything it is sent. Returns the names removed."""
    names = [name for name in os.environ if is_secret_name(name)]
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_void_p
    for name in names:
        value = libc.getenv(name.encode())
        if value:
            ctypes.memset(value, 0, len(ctypes.string_at(value)))
        del os.environ[name]
    return names


@contextmanager
def secrets_hidden() -> Iterator[None]:
    """The credential variables out of this process's environment for the duration, then back: for
    starting a child that inherits the environment as it is (multiprocessing's spawn, and the resource
    tracker it starts with the first child). Use it on the thread that reads the keys (the event
    loop's: the providers read theirs there), so no reader sees them missing."""
    hidden = {name: os.environ.pop(name) for name in list(os.environ) if is_secret_name(name)}
    try:
        yield
    finally:
        os.environ.update(hidden)
