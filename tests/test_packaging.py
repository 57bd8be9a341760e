"""How cuda-llm installs and how its layers import each other.

`pip install .` (not editable) puts everything under the one name `cuda_llm` (cuda_llm.engine,
cuda_llm.app, cuda_llm.tasks, cuda_llm.themes), so a virtual environment that already has packages
called `app` and `engine` keeps them, and ours still runs. And no module imports up the layers: the
engine never imports the TUI, the GPU side and the store never import the loop or the judge's logic.
"""

from __future__ import annotations

import ast
import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The module's venv and two pip installs are built in the first test's setup: minutes on a busy
# machine, each command within _sh's own limit, so the per-test limit (pyproject.toml) is raised here.
pytestmark = pytest.mark.timeout(1800)
ENGINE = ROOT / "engine"

# Every name an installed distribution of ours may put at the top of site-packages.
OUR_TOP_LEVEL = {"cuda_llm"}


def _sh(*cmd: str | Path, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None):
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def _copy_sources(dest: Path) -> None:
    """The files a clone has (a build in the checkout itself would leave build/ behind there)."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.split(b"\0")
        for name in filter(None, files):
            src = ROOT / name.decode()
            if src.is_file():
                (dest / name.decode()).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name.decode())
        return
    ignore = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*cache")
    shutil.copytree(ROOT, dest, ignore=ignore, dirs_exist_ok=True)


def _dummy(root: Path, name: str) -> Path:
    """A distribution `dummy-NAME` with a top-level package NAME that says who it is."""
    folder = root / f"dummy-{name}"
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(f"WHO = 'dummy-{name}'\n")
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "dummy-{name}"\nversion = "1.0"\n[tool.setuptools]\npackages = ["{name}"]\n'
    )
    return folder


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding dummy `app` and `engine` packages, then cuda-llm installed from a copy of
    the sources (not editable). Its dependencies come from the test environment through a .pth file:
    a plain path entry, so no editable-install hook of the test environment runs there."""
    tmp = tmp_path_factory.mktemp("install")
    venv = tmp / "venv"
    _sh(sys.executable, "-m", "venv", venv, cwd=tmp)
    py = venv / "bin" / "python"
    _sh(py, "-m", "pip", "install", "-q", _dummy(tmp, "app"), _dummy(tmp, "engine"), cwd=tmp)
    src = tmp / "src"
    src.mkdir()
    _copy_sources(src)
    _sh(py, "-m", "pip", "install", "-q", "--no-deps", src, cwd=tmp)
    purelib = Path(_sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).stdout.strip())
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "zz_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    return venv


def _python(venv: Path, code: str, cwd: Path) -> str:
    return _sh(venv / "bin" / "python", "-c", code, cwd=cwd).stdout.strip()


@pytest.mark.slow
def test_ours_installs_beside_other_packages_named_app_and_engine(installed, tmp_path):
    purelib = Path(_python(installed, "import sysconfig; print(sysconfig.get_paths()['purelib'])", tmp_path))
    # Theirs are untouched and still theirs.
    assert _python(installed, "import app, engine; print(app.WHO, engine.WHO)", tmp_path) == "dummy-app dummy-engine"
    # Ours is the installed copy, under its own name only.
    where = json.loads(
        _python(
            installed,
            "import json, cuda_llm, cuda_llm.engine, cuda_llm.app, cuda_llm.tasks, cuda_llm.themes, importlib.util;"
            "print(json.dumps([m.__file__ for m in (cuda_llm.engine, cuda_llm.app, cuda_llm.tasks, cuda_llm.themes)]"
            " + [importlib.util.find_spec(n) is None for n in ('tasks', 'themes')]))",
            tmp_path,
        )
    )
    assert all(Path(f).is_relative_to(purelib / "cuda_llm") for f in where[:4]), where
    assert where[4:] == [True, True], "no top-level tasks or themes package"
    record = next(purelib.glob("cuda_llm-*.dist-info")) / "RECORD"
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text().splitlines()}
    assert {t for t in tops if not t.endswith(".dist-info") and t != ".."} == OUR_TOP_LEVEL, tops
    # After importing ours, `app` and `engine` still resolve to theirs (we add nothing to sys.path).
    assert _python(installed, "import cuda_llm.app.cli.main, app, engine; print(app.WHO, engine.WHO)", tmp_path) == (
        "dummy-app dummy-engine"
    )


@pytest.mark.slow
def test_the_installed_console_script_runs(installed, tmp_path):
    script = installed / "bin" / "cuda-llm"
    env = {"PATH": "/usr/bin:/bin", "CUDA_LLM_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    from cuda_llm import __version__

    assert _sh(script, "--version", cwd=tmp_path, env=env).stdout.strip() == f"cuda-llm {__version__}"
    listed = json.loads(_sh(script, "tasks", "--json", cwd=tmp_path, env=env).stdout)
    assert {t["name"] for t in listed} >= {"vector_add", "matmul"}
    assert all(Path(t["folder"]).is_relative_to(installed) for t in listed), "the installed task library"
    # (Compiling from an installed copy is tests/test_cli.py's: CI installs the package that way.)


# ---- layering -------------------------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    """Every module a source file imports (absolute names; relative imports are not used here)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _violations(folder: Path, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for name in _imports(path):
            if name.startswith(forbidden) and not name.startswith(allowed):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def test_the_engine_never_imports_the_tui():
    assert not _violations(ENGINE, ("cuda_llm.app", "app", "textual"))


@pytest.mark.parametrize("layer", ["core", "task", "contract", "compile", "gpu", "store"])
def test_lower_layers_do_not_import_the_loop_the_judge_or_the_commands(layer):
    path = ENGINE / layer
    forbidden = ("cuda_llm.engine.fsr", "cuda_llm.app.cli", "cuda_llm.engine.judge", "cuda_llm.engine.llm.spec")
    # The store records judgements: it may read their data types (judgement.py and what it holds) and
    # the caps their text is kept to (output_caps.py), never the judging itself (judge.py,
    # judge_environment.py).
    allowed = ("cuda_llm.engine.judge.judgement", "cuda_llm.engine.judge.output_caps") if layer == "store" else ()
    assert path.is_dir(), path
    assert not _violations(path, forbidden, allowed)


def test_the_judgement_data_imports_no_judging():
    """What the store may import from judge/ stays plain data."""
    for name in ("judgement.py", "metrics.py"):
        imported = _imports(ENGINE / "judge" / name)
        assert not {n for n in imported if n.startswith(("cuda_llm.engine.judge.judge", "cuda_llm.engine.fsr"))}
        assert not {n for n in imported if n.startswith("cuda_llm.engine.judge.judge_environment")}
