"""The structure stays as docs/architecture.md draws it: the layer contract (.importlinter, checked by
import-linter) and the concepts that have exactly one home.

import-linter reads the package `cuda_llm` from the file system. An editable install keeps engine/ and
app/ beside cuda_llm/ rather than in it, so the check runs on a tree of links that has them where an
installed copy has them. `python tests/test_layers.py` runs the same check (.ci/run calls it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "app", "tasks", "themes")


def _tree(dest: Path, copy: bool = False) -> Path:
    """`dest`/cuda_llm laid out as installed: links to the checkout's folders, or copies of them."""
    pkg = dest / "cuda_llm"
    pkg.mkdir(parents=True)
    shutil.copy2(ROOT / "cuda_llm" / "__init__.py", pkg / "__init__.py")
    for name in PACKAGES:
        if copy:
            shutil.copytree(ROOT / name, pkg / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (pkg / name).symlink_to(ROOT / name, target_is_directory=True)
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's verdict on the package under `tree` (it looks for packages in its working folder)."""
    script = Path(sys.executable).with_name("lint-imports")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "importlinter.cli"]
    return subprocess.run(
        [*command, "--no-cache", str(ROOT / ".importlinter")], cwd=tree, capture_output=True, text=True, timeout=300
    )


needs_import_linter = pytest.mark.skipif(
    shutil.which("lint-imports") is None and not Path(sys.executable).with_name("lint-imports").exists(),
    reason="import-linter is not installed (pip install -e '.[test]')",
)


@needs_import_linter
def test_the_layer_contract_holds(tmp_path):
    done = lint_imports(_tree(tmp_path))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_the_contract_lists_no_exceptions():
    text = (ROOT / ".importlinter").read_text()
    assert "ignore_imports" not in text
    assert "unmatched_ignore_imports" not in text


@needs_import_linter
@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "line", "broken"),
    [
        ("engine/core/zz_breach.py", "from cuda_llm.engine.fsr import loop\n", "Each layer"),
        ("engine/compile/zz_breach.py", "from cuda_llm.engine.compile import compiler_pool\n", "No import circles"),
        ("engine/gpu/zz_breach.py", "import textual\n", "terminal UI"),
        ("app/zz_breach.py", "from cuda_llm.engine.fsr.loop import FsrLoop\n", "through its API"),
    ],
)
def test_the_contract_catches_a_breach(tmp_path, where, line, broken):
    """Each contract goes red when its rule is broken (on a copy of the sources)."""
    tree = _tree(tmp_path, copy=True)
    (tree / "cuda_llm" / where).write_text(line)
    if "circles" in broken:  # and the pool imports the newcomer back
        pool = tree / "cuda_llm" / "engine" / "compile" / "compiler_pool.py"
        pool.write_text(pool.read_text() + "\nfrom cuda_llm.engine.compile import zz_breach  # noqa\n")
    done = lint_imports(tree)
    assert done.returncode != 0
    assert re.search(re.escape(broken) + r".* BROKEN", done.stdout), done.stdout[-3000:]


# ---- one home per concept -------------------------------------------------------------------------


def homes(pattern: str, root: Path = ROOT, tops: tuple[str, ...] = ("engine", "app")) -> set[str]:
    """The files under `tops` whose text matches `pattern`."""
    rx = re.compile(pattern, re.M)
    files = [p for top in tops for p in sorted((root / top).rglob("*.py")) if "__pycache__" not in p.parts]
    return {str(p.relative_to(root)) for p in files if rx.search(p.read_text(encoding="utf-8"))}


NVRTC_LOADER = r"^\s*(from cuda\.bindings import nvrtc|import cuda\.bindings\.nvrtc|from cuda\.bindings\.nvrtc import)"


def test_one_nvrtc_loader():
    assert homes(NVRTC_LOADER) == {"engine/compile/nvrtc_library.py"}


def test_the_home_check_sees_a_second_loader(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "engine" / "a.py").write_text("from cuda.bindings import nvrtc\n")
    (tmp_path / "app" / "b.py").write_text("def f():\n    import cuda.bindings.nvrtc\n")
    assert homes(NVRTC_LOADER, tmp_path) == {"engine/a.py", "app/b.py"}


# A consumer reaching into a running session's loop (session.loop.provider, .judge, .read_counters_of):
# what the UI and the CLI need of a session is engine/fsr/session.py's Session API.
INTO_THE_LOOP = r"\bsession\.loop\b|\.loop\.(provider|judge|store|read_counters_of)\b"


def test_no_consumer_reaches_into_the_loop():
    assert homes(INTO_THE_LOOP, tops=("app", "bench")) == set()


def test_the_home_check_sees_a_reach_into_the_loop(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "app" / "a.py").write_text("p = self.session.loop.provider\n")
    (tmp_path / "bench" / "b.py").write_text("j = await s.loop.judge.library()\n")
    (tmp_path / "app" / "c.py").write_text("n = request.options.loop.candidates\n")  # the settings, not the loop
    assert homes(INTO_THE_LOOP, tmp_path, tops=("app", "bench")) == {"app/a.py", "bench/b.py"}


# Reading a model spec's text: its kind by prefix, by splitting at the ':', or by comparing with "manual".
SPEC_READER = (
    r"\.startswith\(\s*[\"'](ollama|openai|replay|manual)"
    r"|(spec|model)[][A-Za-z_.()]*\.(split|partition|rpartition)\(\s*[\"']:[\"']"
    r"|[=!]= [\"']manual[\"']"
)


def test_one_reader_of_the_model_spec():
    """engine/llm/spec.py parse_spec reads a spec's text; everything else asks its backend."""
    assert homes(SPEC_READER) == set()
    assert homes(r"^def parse_spec\b") == {"engine/llm/spec.py"}


def test_the_home_check_sees_a_second_spec_reader(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "engine" / "a.py").write_text('origin = "replay" if provider.spec.startswith("replay:") else "model"\n')
    (tmp_path / "engine" / "b.py").write_text('kind = spec.strip().lower().partition(":")[0]\n')
    (tmp_path / "app" / "c.py").write_text('if record.model.split(":", 1)[0] == "ollama": pass\n')
    (tmp_path / "app" / "d.py").write_text('manual = choice.spec == "manual"\n')
    (tmp_path / "app" / "e.py").write_text("spec = parse_spec(text)\nprint(spec.backend.replays)\n")
    assert homes(SPEC_READER, tmp_path) == {"engine/a.py", "engine/b.py", "app/c.py", "app/d.py"}


# Reading the device label back: it is built for showing (engine/gpu/protocol.py device_label) and
# compile-only travels beside it as a fact (SessionStarted.compile_only, SessionRecord.compile_only).
LABEL_READER = r"\.startswith\(\s*([\"']compile-only|COMPILE_ONLY\b)"


def test_no_reader_of_the_device_label():
    assert homes(LABEL_READER) == set()


def test_the_home_check_sees_a_device_label_reader(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text('compile_only = self.device.startswith("compile-only")\n')
    (tmp_path / "engine" / "b.py").write_text("gpu = not record.device.startswith(COMPILE_ONLY)\n")
    (tmp_path / "engine" / "c.py").write_text("compile_only = event.compile_only\n")
    assert homes(LABEL_READER, tmp_path) == {"app/a.py", "engine/b.py"}


STATUS_WORD = r"[\"'](format_error|compile_error|compiled|launch_error|crashed|timed_out|wrong|correct|suspect)[\"']"


def status_tables(root: Path = ROOT) -> set[str]:
    """Files outside engine/core/status.py that spell out statuses as a table: three or more
    `"status": ...` entries, or a set or Literal of three or more status words on one line."""
    entry = re.compile(r"^\s*" + STATUS_WORD + r"\s*:", re.M)
    listed = re.compile(r"(\{|\[|\()\s*" + STATUS_WORD + r"(\s*,\s*" + STATUS_WORD + r"){2,}")
    found = set()
    for top in ("engine", "app"):
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if len(entry.findall(text)) >= 3 or listed.search(text):
                found.add(str(path.relative_to(root)))
    return found - {"engine/core/status.py"}


def test_one_status_table():
    """A status's word, mark, colour, rank and kind live in engine/core/status.py only."""
    assert status_tables() == set()


def test_the_home_check_sees_a_second_status_table(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text(
        'MARKS = {\n    "wrong": "x",\n    "correct": "v",\n    "crashed": "!",\n}\n'
    )
    (tmp_path / "engine" / "b.py").write_text('FAILED = frozenset({"wrong", "crashed", "timed_out"})\n')
    (tmp_path / "engine" / "c.py").write_text('if status in ("correct", "suspect"):\n    pass\n')
    assert status_tables(tmp_path) == {"app/a.py", "engine/b.py"}


# A dtype's name quoted (or as torch.NAME): every dtype the table knows, and those it may come to know.
DTYPE_WORD = r"(?:[\"'](?:torch\.)?|\btorch\.)(?:float(?:16|32|64)|bfloat16|u?int(?:8|16|32|64)|bool)[\"']?"


def dtype_tables(root: Path = ROOT) -> set[str]:
    """Files outside engine/task/dtypes.py that list dtypes: three or more `"dtype": ...` (or
    `torch.dtype: ...`) entries, a collection of three or more dtype names on one line, or three or more
    lines naming a dtype's own kernel or functor (harness_compare_float16, ToDoubleF16)."""
    entry = re.compile(r"^\s*" + DTYPE_WORD + r"\s*:", re.M)
    listed = re.compile(r"(\{|\[|\()\s*" + DTYPE_WORD + r"(\s*,\s*" + DTYPE_WORD + r"){2,}")
    per_dtype = re.compile(r"\b(harness_compare_[a-z]+\d+|ToDouble[A-Z]\w*)\b")
    found = set()
    for top in ("engine", "app"):
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if len(entry.findall(text)) >= 3 or listed.search(text) or len(set(per_dtype.findall(text))) >= 3:
                found.add(str(path.relative_to(root)))
    return found - {"engine/task/dtypes.py"}


def test_one_dtype_table():
    """A dtype's names, sizes, poison, comparison and tolerance live in engine/task/dtypes.py only."""
    assert dtype_tables() == set()


def test_the_home_check_sees_a_second_dtype_table(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "engine" / "a.py").write_text(
        '_DTYPES = {\n    "torch.float32": "float32",\n    "torch.float16": "float16",\n    "torch.int8": "int8",\n}\n'
    )
    (tmp_path / "engine" / "b.py").write_text('COMPARE_DTYPES = ("float32", "float64", "float16", "int32")\n')
    (tmp_path / "engine" / "c.py").write_text(
        "HARNESS_COMPARE(harness_compare_float32, unsigned int, ToDoubleF32)\n"
        "HARNESS_COMPARE(harness_compare_float16, unsigned short, ToDoubleF16)\n"
        "HARNESS_COMPARE(harness_compare_int8, unsigned char, ToDoubleI8)\n"
    )
    (tmp_path / "app" / "d.py").write_text(
        'TOLERANCES = {\n    "float64": ("rms", 1e-9),\n    "float32": ("rms", 1e-4),\n'
        '    "float16": ("rms", 1e-2),\n}\n'
    )
    (tmp_path / "app" / "e.py").write_text('if dtype in ("float32", "float16"):\n    pass\nx = DTYPES["int8"]\n')
    assert dtype_tables(tmp_path) == {"engine/a.py", "engine/b.py", "engine/c.py", "app/d.py"}


# Building the engine's SessionOptions: app/options.py session_options, for the start screen, `run` and `bench`.
OPTIONS_BUILDER = r"\bSessionOptions\s*\("


def test_one_builder_of_session_options():
    assert homes(OPTIONS_BUILDER) == {"app/options.py"}
    assert len(re.findall(OPTIONS_BUILDER, (ROOT / "app" / "options.py").read_text())) == 1


def test_the_home_check_sees_a_second_options_builder(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text("return SessionOptions(\n    task=task, model=args.model)\n")
    (tmp_path / "engine" / "b.py").write_text("options = SessionOptions (task, model)\n")
    (tmp_path / "app" / "c.py").write_text("options = session_options(where, task, model)\nclass SessionOptions:\n")
    assert homes(OPTIONS_BUILDER, tmp_path) == {"app/a.py", "engine/b.py"}


def backend_lists(root: Path = ROOT) -> set[str]:
    """Files of app/ that spell out the model backends themselves (engine/llm/spec.py BACKENDS is their
    home): a collection of two or more quoted backend kinds on one line, or a comparison with one."""
    from cuda_llm.engine.llm.spec import BACKENDS

    kind = r"[\"'](?:" + "|".join(map(re.escape, BACKENDS)) + r")[\"']"
    listed = re.compile(r"(\{|\[|\()\s*" + kind + r"(\s*,\s*" + kind + r")+")
    compared = re.compile(r"[=!]=\s*" + kind + "|" + kind + r"\s*[=!]=")
    return homes(listed.pattern, root, tops=("app",)) | homes(compared.pattern, root, tops=("app",))


def test_the_tui_takes_the_backends_from_the_registry():
    assert backend_lists() == set()


def test_the_home_check_sees_a_hard_coded_backend_list(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text('ENDPOINT_KINDS = ("openai", "ollama")\n')
    (tmp_path / "app" / "b.py").write_text('if ep.kind == "openai":\n    pass\n')
    (tmp_path / "app" / "c.py").write_text("KINDS = ['ollama','replay', 'manual']\n")
    (tmp_path / "app" / "d.py").write_text('choice = ModelChoice(f"ollama:{m}", host=host)\nkinds = server_kinds()\n')
    assert backend_lists(tmp_path) == {"app/a.py", "app/b.py", "app/c.py"}


# Framing a message for the GPU worker's pipe: a length header, packing a length, reading exactly so
# many bytes. engine/gpu/wire.py is its home, for the worker and the engine's client alike.
WIRE_FRAMING = r"struct\.Struct\(\s*[\"'][<>!=@]?[QIL][\"']\s*\)|\.pack\(\s*len\(|\.readexactly\(|def _read_exact\b"


def test_one_home_of_the_wire_framing():
    assert homes(WIRE_FRAMING) == {"engine/gpu/wire.py"}


def test_the_home_check_sees_a_second_framing(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "engine" / "a.py").write_text('_HEADER = struct.Struct("<Q")\n')
    (tmp_path / "engine" / "b.py").write_text("proc.stdin.write(HEADER.pack(len(payload)) + payload)\n")
    (tmp_path / "engine" / "c.py").write_text("size = await stdout.readexactly(8)\n")
    (tmp_path / "app" / "d.py").write_text('_SECTION = struct.Struct("<IIQQ")\nproc.stdin.write(frame(message))\n')
    assert homes(WIRE_FRAMING, tmp_path) == {"engine/a.py", "engine/b.py", "engine/c.py"}


def pane_lists(root: Path = ROOT) -> set[str]:
    """Files of app/ outside app/panes/ that list the run screen's panes themselves (app/panes/registry.py
    is the one list): a Python file naming two or more panes (their ids or their widget classes), or a
    stylesheet with rules for two or more pane ids."""
    from cuda_llm.app.panes.registry import PANES

    ids = re.compile(r"[\"'#](" + "|".join(re.escape(p) for p in PANES) + r")\b")
    names = sorted({getattr(p.widget, "__name__", "") for p in PANES.values()})
    classes = re.compile(r"\b(" + "|".join(names) + r")\b")
    found = set()
    for path in sorted((root / "app").rglob("*")):
        if path.suffix not in (".py", ".tcss") or path.relative_to(root).parts[:2] == ("app", "panes"):
            continue
        text = path.read_text(encoding="utf-8")
        named = len(set(ids.findall(text))) >= 2 or (path.suffix == ".py" and len(set(classes.findall(text))) >= 2)
        if named:
            found.add(str(path.relative_to(root)))
    return found


def test_one_list_of_panes():
    """A pane is declared once, in app/panes/; the run screen composes, binds and redraws what the
    registry holds, so a second list (of ids, of classes, of CSS rules) would drift from it."""
    assert pane_lists() == set()


def test_the_home_check_sees_a_second_list_of_panes(tmp_path):
    (tmp_path / "app" / "panes").mkdir(parents=True)
    (tmp_path / "app" / "screens").mkdir()
    (tmp_path / "app" / "a.py").write_text('PANES = (("prompt-pane", "Prompt"),\n    ("kernel-pane", "Kernel"))\n')
    (tmp_path / "app" / "screens" / "b.py").write_text(
        "panes = (\n    (TREE, CandidatesPane),\n    (LOG, EventLog),\n)\n"
    )
    (tmp_path / "app" / "c.tcss").write_text("#prompt-pane, #kernel-pane {\n    column-span: 3;\n}\n")
    (tmp_path / "app" / "d.tcss").write_text("KernelPane TextArea {\n}\nPromptPane Log {\n}\n")  # their insides
    (tmp_path / "app" / "e.py").write_text('self.show_pane("kernel-pane")\nself.query_one(KernelPane).jump_to(1, 2)\n')
    (tmp_path / "app" / "panes" / "registry.py").write_text('PANES = ("prompt-pane", "kernel-pane")\n')
    assert pane_lists(tmp_path) == {"app/a.py", "app/screens/b.py", "app/c.tcss"}


def test_the_cluster_s_pools_pass_for_the_local_ones_without_an_excuse():
    """engine/judge/pools.py's Protocols are the seam: mypy checks the cluster's pools against them,
    so no argument there is excused from its type."""
    assert homes(r"type: ignore\[arg-type\]", tops=("engine/cluster", "engine/judge")) == set()


def test_the_code_cites_only_documents_of_the_repository():
    """Docstrings point at docs/architecture.md, never at a design page the repository does not hold."""
    assert homes(r"DESIGN\.md") == set()
    assert (ROOT / "docs" / "architecture.md").is_file()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        result = lint_imports(_tree(Path(folder)))
    print(result.stdout[-6000:], result.stderr[-2000:], sep="")
    sys.exit(result.returncode)
