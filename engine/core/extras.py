"""How a person adds one of cuda-llm's optional extras (torch, library, cluster...).

cuda-llm is installed from its checkout, so an extra is too: `pip install ".[torch]"` there. The
spelling `cuda-llm[torch]` would send pip to a package index for a distribution of that name, which
is not this project (tests/test_install_hints.py holds every hint and the docs to this form).
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """The command, in words, that adds `extra` (a name under [project.optional-dependencies])."""
    return f'pip install ".[{extra}]" in the cuda-llm checkout'
