"""Keeping credentials out of the processes that run model-written code.

The GPU worker runs kernels a model wrote. On a machine where the GPU may read the process's pageable
host memory (HMM, or ATS on Grace Hopper), a kernel can read any host address of that process, its
environment block included, and write what it finds into an output that comes back to the model as
numbers in a mismatch report. So the worker starts with no variable that looks like a credential:
it needs none (the model server's key is the engine's, in this process only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
