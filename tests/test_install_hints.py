"""What the README and the program tell a newcomer to install can be run as written: the two opening
lines make the same `.venv`, and every extra is installed from the checkout (`pip install ".[torch]"`)
under a name pyproject.toml declares. `cuda-llm[torch]` sends pip to a package index for a
distribution of that name, which is not this project (issue 47: the README said so for the torch extra,
while the bench and cluster sections and three messages still wrote it)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
# The user's docs and every source a message can come from (the session records under docs/runs are not).
# The hint's one builder (engine/core/extras.py) is checked by calling it.
BUILDER = ROOT / "engine" / "core" / "extras.py"
SOURCES = sorted(p for top in ("engine", "app", "bench") for p in (ROOT / top).rglob("*.py") if p != BUILDER)
TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *SOURCES]
# The README names the wrong spelling once, to warn against it: "`pip install ".[torch]"`, not `cuda-llm[torch]`".
WARNING = "not `"
CHECKOUT_EXTRAS = re.compile(r"""pip install ["']\.\[([^\]]*)\]["']""")


def where(path: Path, text: str, at: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, at) + 1}"


def test_no_text_installs_the_project_by_a_package_name():
    found = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"cuda-llm\[", text):
            if text[max(0, m.start() - len(WARNING)) : m.start()] == WARNING:
                continue
            found.append(where(path, text, m.start()))
    assert found == [], f'installs "cuda-llm[EXTRA]" (no such package): {found}'


def test_every_extra_named_is_declared():
    named = {}
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for m in CHECKOUT_EXTRAS.finditer(text):
            for extra in m.group(1).split(","):
                named.setdefault(extra.strip(), where(path, text, m.start()))
    assert named, "no extra named anywhere: the pattern no longer matches the docs"
    assert {e: at for e, at in named.items() if e not in EXTRAS} == {}


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_hint_installs_the_extra_from_the_checkout(extra):
    from cuda_llm.engine.core.extras import install_hint

    assert CHECKOUT_EXTRAS.search(install_hint(extra)).group(1) == extra


def test_the_two_opening_lines_make_the_same_venv():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    app, tests = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert app.startswith(venv + "pip install . && ") and tests.startswith(venv + 'pip install ".[test]" && ')
    assert "Both lines make the same `.venv`" in readme
