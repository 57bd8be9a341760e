"""The type checker's strictness is pinned: pyproject.toml's [tool.mypy] keeps every function of engine/
and app/ annotated and checks the engine's foundations (core, task, contract) as mypy's --strict does;
.ci/run runs it over both packages; every `type: ignore` names its error code and says why."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRICT_PACKAGES = {"cuda_llm.engine.core.*", "cuda_llm.engine.task.*", "cuda_llm.engine.contract.*"}
# mypy's --strict, flag by flag (warn_redundant_casts is global: checked with the global section).
STRICT_FLAGS = {
    "disallow_any_generics": True,
    "disallow_subclassing_any": True,
    "disallow_untyped_calls": True,
    "disallow_untyped_defs": True,
    "disallow_incomplete_defs": True,
    "check_untyped_defs": True,
    "disallow_untyped_decorators": True,
    "warn_unused_ignores": True,
    "warn_return_any": True,
    "implicit_reexport": False,
    "strict_equality": True,
    "extra_checks": True,
}
GLOBAL_FLAGS = {
    "disallow_untyped_defs": True,
    "strict_equality": True,
    "warn_unused_ignores": True,
    "warn_redundant_casts": True,
}
# Settings that switch checks off; no override of ours may use them.
LOOSENING = {"ignore_errors", "disable_error_code", "allow_untyped_defs", "allow_untyped_calls", "follow_imports"}


def _mypy() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def _modules(override: dict) -> set[str]:
    module = override["module"]
    return {module} if isinstance(module, str) else set(module)


def test_every_function_of_engine_and_app_is_annotated():
    mypy = _mypy()
    for flag, value in GLOBAL_FLAGS.items():
        assert mypy.get(flag) is value, f"[tool.mypy] {flag} must stay {value}"
    for override in mypy.get("overrides", []):
        for flag, value in override.items():
            assert flag not in LOOSENING, f"an override of {sorted(_modules(override))} sets {flag}"
            # No module is exempt any more (the run screen, the last, went with the pane registry).
            assert flag not in STRICT_FLAGS or value == STRICT_FLAGS[flag], (
                f"an override of {sorted(_modules(override))} weakens {flag}"
            )


def test_the_engine_s_foundations_are_checked_strictly():
    strict = [o for o in _mypy().get("overrides", []) if _modules(o) & STRICT_PACKAGES]
    covered = set().union(*(_modules(o) for o in strict)) if strict else set()
    assert covered >= STRICT_PACKAGES, f"no strict override for {sorted(STRICT_PACKAGES - covered)}"
    for package in STRICT_PACKAGES:
        flags: dict[str, object] = {}
        for override in strict:
            if package in _modules(override):
                flags.update(override)
        missing = {f: v for f, v in STRICT_FLAGS.items() if flags.get(f) != v}
        assert not missing, f"{package} is not checked with {missing}"


def test_ci_runs_mypy_over_engine_and_app_with_this_config():
    ci = (ROOT / ".ci" / "run").read_text()
    line = next((x for x in ci.splitlines() if re.search(r"\bmypy --config-file", x)), "")
    assert '"$root/pyproject.toml"' in line and "-p cuda_llm.engine" in line and "-p cuda_llm.app" in line, line


def test_every_type_ignore_names_its_code_and_says_why():
    bare = []
    for top in ("engine", "app"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for n, text in enumerate(path.read_text().splitlines(), 1):
                if "type: ignore" in text and not re.search(r"type: ignore\[[a-z-]+(, ?[a-z-]+)*\] +# \S", text):
                    bare.append(f"{path.relative_to(ROOT)}:{n}")
    assert not bare, f"a type: ignore without its error code and a reason: {bare}"
