"""bench/gpu_mutation.py, the driver of the GPU mutation run: a mutant is the file it was made
from, patched, and a process started after the write imports the mutant, never a cached copy."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys

import pytest

from bench.gpu_mutation import Mutant, function_of, run_order
from bench.named_mutants import write_fresh

ORIGINAL = "def f(x):\n    if x < 1:\n        return 0\n    return x\n"


def mutant(hunks, original=ORIGINAL) -> Mutant:
    return Mutant("x_f__mutmut_3", "m.py", "x_f", hashlib.sha256(original.encode()).hexdigest(), hunks)


def test_a_mutant_replaces_its_lines_and_keeps_the_rest():
    m = mutant(((1, 2, ("    if x <= 1:\n",)), (3, 4, ("    return -x\n", "    # two lines for one\n"))))
    assert (
        m.apply_to(ORIGINAL) == "def f(x):\n    if x <= 1:\n        return 0\n    return -x\n    # two lines for one\n"
    )


def test_a_mutant_of_another_version_of_the_file_is_refused():
    with pytest.raises(ValueError, match="generate the mutants again"):
        mutant(((1, 2, ("    if x <= 1:\n",)),)).apply_to(ORIGINAL.replace("0", "2"))


def test_the_function_is_the_key_without_the_mutant_number():
    assert function_of("xǁHarnessǁcompare__mutmut_12") == "xǁHarnessǁcompare"
    assert function_of("x_poison__mutmut_6") == "x_poison"


def test_the_mutants_named_first_run_first_in_their_order_and_the_rest_shuffled():
    ms = [Mutant(f"x_f__mutmut_{i}", "m.py", "x_f", "", ()) for i in range(40)]
    ordered = run_order(ms, ["x_f__mutmut_7", "x_f__mutmut_2", "x_f__mutmut_99"], seed=0)
    names = [m.name for m in ordered]
    assert names[:2] == ["x_f__mutmut_7", "x_f__mutmut_2"]  # a name of no mutant is passed over
    assert sorted(names) == sorted(m.name for m in ms)
    rest = names[2:]
    assert rest != sorted(rest, key=lambda n: int(n.rsplit("_", 1)[1]))  # shuffled
    assert rest == [m.name for m in run_order(ms, ["x_f__mutmut_7", "x_f__mutmut_2"], seed=0)][2:]  # by the seed


def test_a_same_size_mutant_written_in_the_same_second_is_what_a_new_process_imports(tmp_path):
    (tmp_path / "m.py").write_text("X = 1\n")

    def imported() -> str:
        # bytecode written beside the source, as a slot's processes do
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        code = "import m; print(m.X)"
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
        return done.stdout.strip()

    assert imported() == "1"  # and a .pyc of X = 1 is cached now
    assert list((tmp_path / "__pycache__").glob("m.*.pyc"))
    write_fresh(tmp_path / "m.py", "X = 2\n", 1_000_000_001)
    assert imported() == "2"
    write_fresh(tmp_path / "m.py", "X = 1\n", 1_000_000_002)
    assert imported() == "1"


def test_a_method_s_mutant_patches_the_method_of_its_own_class():
    """Two classes with an __init__ each: the second class's mutant must not land in the first's."""
    cst = pytest.importorskip("libcst")
    from bench.gpu_mutation import _function_in

    module = cst.parse_module(
        "class A:\n    def __init__(self):\n        self.a = 1\n\n"
        "class B:\n    def __init__(self):\n        self.b = 2\n\n"
        "def __init__():\n    pass\n"
    )
    found = _function_in(module, "__init__", "B")
    assert found is not None and "self.b = 2" in module.code_for_node(found)
    top = _function_in(module, "__init__", None)
    assert top is not None and "pass" in module.code_for_node(top)
    assert _function_in(module, "__init__", "C") is None


def test_a_tree_in_an_ignored_folder_of_a_checkout_is_copied_whole(tmp_path, monkeypatch):
    """An older commit's archive unpacked under an ignored folder: git lists none of its files, and
    the copy of the checkout each slot runs in must not come out empty."""
    import bench.named_mutants as named_mutants

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("old/\n")
    old = tmp_path / "old"
    (old / "engine").mkdir(parents=True)
    (old / "engine" / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(named_mutants, "ROOT", old)
    named_mutants.checkout_copy(tmp_path / "slot0")
    assert (tmp_path / "slot0" / "engine" / "m.py").read_text() == "x = 1\n"


def test_a_verdict_of_another_version_stands_only_for_mutants_of_unchanged_functions(tmp_path, monkeypatch):
    """Mutants made from two versions of a file: those of the function that did not change keep an
    earlier run's verdicts, though their lines moved; every mutant of the edited function runs again."""
    pytest.importorskip("mutmut")
    from bench.gpu_mutation import make_mutants, still_done

    monkeypatch.chdir(tmp_path)  # mutmut reads its settings from the working directory
    (tmp_path / "setup.cfg").write_text("[mutmut]\nsource_paths=engine\n")
    (tmp_path / "engine").mkdir()
    kept = "def kept(x):\n    return x + 1\n"
    # `documented` changes only where no mutant does: its mutants are the same lines, in another function
    then = make_mutants(
        "engine/m.py", kept + "\n\ndef edited(y):\n    return y * 2\n\n\ndef documented(z):\n    return z - 1\n"
    )
    now = make_mutants(
        "engine/m.py",
        "import os\n\n\n"
        + kept
        + "\n\ndef edited(y):\n    return y * 3 - 1\n"
        + '\n\ndef documented(z):\n    """One less."""\n    return z - 1\n',
    )
    by_function = {f: {m.name for m in now if m.function == f} for f in ("x_kept", "x_edited", "x_documented")}
    assert all(by_function.values())
    done = {m.name for m in then}
    assert still_done(done, then, now) == by_function["x_kept"]
    # a verdict no run gave is not made up, and mutants of a file made without fingerprints never carry
    assert still_done(set(), then, now) == set()
    unprinted = [dataclasses.replace(m, function_sha256="") for m in now]
    assert still_done(done, then, unprinted) == set()


def test_a_run_skips_its_own_verdicts_by_name_and_an_earlier_version_s_where_unchanged(tmp_path, monkeypatch):
    pytest.importorskip("mutmut")
    from bench.gpu_mutation import generate, load_mutants, not_done, to_run

    def version(folder, body):
        (tmp_path / folder / "engine").mkdir(parents=True)
        (tmp_path / folder / "engine" / "m.py").write_text(body)
        monkeypatch.setattr("bench.gpu_mutation.ROOT", tmp_path / folder)
        generate(tmp_path / folder / "mutants", ["engine/m.py"])
        return load_mutants(tmp_path / folder / "mutants")

    kept = "def kept(x):\n    return x + 1\n\n\n"
    then = version("then", kept + "def edited(y):\n    return y * 2\n")
    now = version("now", kept + "def edited(y):\n    return y * 3\n")

    def results(name, mutants):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"name": m.name, "status": "killed"}) + "\n" for m in mutants))
        return path

    earlier = results("earlier.jsonl", then)  # every mutant of the old version judged
    edited = {m.name for m in now if m.function == "x_edited"}
    judged = next(m for m in now if m.function == "x_edited")  # one of the new ones, judged already
    own = results("own.jsonl", [judged])
    left = not_done(now, [own], tmp_path / "then" / "mutants", [earlier])
    assert {m.name for m in left} == edited - {judged.name}
    assert len(not_done(now, [], None, [])) == len(now)
    # named first, a judged mutant runs again (a survivor a new test targets), the others as before
    again = to_run(now, [judged.name], [own], tmp_path / "then" / "mutants", [earlier])
    assert again[0] == judged and {m.name for m in again} == edited
    with pytest.raises(SystemExit, match="--earlier-dir"):
        not_done(now, [], None, [earlier])
