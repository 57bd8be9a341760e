"""bench/kernelbench_side_by_side.py without a GPU: the ModelNew it writes for KernelBench (valid
Python, the reply's CUDA unchanged, launches what the plan says), the reply's plan renamed for the
file's names, the arguments, the one-line errors, KernelBench's package loaded by path with
placeholders for its unused imports, and the child runner's memory figures. The bench itself runs on
a GPU machine (docs/performance.md (j))."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench import kernelbench_side_by_side as kb
from cuda_llm.engine.contract.reply import parse_reply

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
TANH_REPLY = ROOT / "examples" / "pytorch" / "replies" / "elementwise_gelu.md"
SOFTMAX_REPLY = ROOT / "examples" / "pytorch" / "replies" / "softmax_rows.md"

# KernelBench's level1/26_GELU_.py as it is, at small sizes (the checkout is not in the repository).
GELU_PROBLEM = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super(Model, self).__init__()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.gelu(x)

    batch_size = 16
    dim = 1000

    def get_inputs():
        x = torch.rand(batch_size, dim)
        return [x]

    def get_init_inputs():
        return []
    """
)


def fake_checkout(root: Path) -> Path:
    (root / "src" / "kernelbench").mkdir(parents=True)
    (root / "src" / "kernelbench" / "eval.py").write_text("", encoding="utf-8")
    (root / "KernelBench" / "level1").mkdir(parents=True)
    (root / "KernelBench" / "level1" / "26_GELU_.py").write_text(GELU_PROBLEM, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> Path:
    """The bench's --dry-run on a small copy of 26_GELU_.py: `tasks import` (a child process), the
    paired reply with its plan, the ModelNew; its work folder."""
    folder = tmp_path_factory.mktemp("kb")
    checkout = fake_checkout(folder / "checkout")
    assert kb.main(["--kernelbench", str(checkout), "--dry-run", "--out", str(folder / "out")]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def gelu_task(dry_run) -> Path:
    (task,) = list((dry_run / "tasks").iterdir())
    return task


class FakeExtension:
    """What load_inline returns, in place of nvcc: records each launch and runs the erf GELU."""

    def __init__(self) -> None:
        self.launches: list[tuple] = []

    def launch_0(self, x, out, n, gx, gy, gz, bx, by, bz, shared):
        self.launches.append((n, (gx, gy, gz), (bx, by, bz), shared))
        threads = gx * gy * gz * bx * by * bz
        flat = out.view(-1)
        count = min(n, threads)
        flat[:count] = torch.nn.functional.gelu(x.reshape(-1)[:count])


def exec_modelnew(source: str, monkeypatch) -> tuple[dict, FakeExtension, dict]:
    import torch.utils.cpp_extension as cpp_extension

    ext, seen = FakeExtension(), {}

    def fake_load_inline(**kwargs):
        seen.update(kwargs)
        return ext

    monkeypatch.setattr(cpp_extension, "load_inline", fake_load_inline)
    namespace: dict = {}
    exec(compile(source, "model_new.py", "exec"), namespace)
    return namespace, ext, seen


def test_modelnew_holds_the_replys_cuda_unchanged_and_launches_what_its_plan_says(gelu_task, monkeypatch):
    reply = kb.PAIRINGS["level1/26_GELU_"].reply.read_text(encoding="utf-8")
    source = kb.modelnew_source(gelu_task, reply, "26_GELU_")
    ast.parse(source)
    cuda = parse_reply(reply).source
    assert kb.reply_cuda_of(source) == cuda
    assert cuda in source  # readable as it is, not escaped

    namespace, ext, seen = exec_modelnew(source, monkeypatch)
    assert seen["functions"] == ["launch_0"]
    assert cuda in seen["cuda_sources"]
    assert "launch_0" in seen["cpp_sources"]
    x = torch.rand(3, 700)
    out = namespace["ModelNew"]()(x)
    # The plan: grid cdiv(batch_size * dim, 256), block 256, n = batch_size * dim.
    assert ext.launches == [(2100, (9, 1, 1), (256, 1, 1), 0)]
    assert out.shape == (3, 700) and out.dtype == torch.float32
    assert torch.allclose(out, torch.nn.functional.gelu(x))


def test_the_paired_gelu_reply_is_the_erf_form_the_file_computes():
    # Its kernel is the example reply's, the tanh line replaced: the file's gelu(x) is the erf form.
    erf = parse_reply(kb.PAIRINGS["level1/26_GELU_"].reply.read_text(encoding="utf-8")).source
    tanh = parse_reply(TANH_REPLY.read_text(encoding="utf-8")).source
    assert "erff(" in erf and "tanhf(" not in erf
    assert [ln for ln in erf.splitlines() if "erff" not in ln] == [
        ln for ln in tanh.splitlines() if "tanhf" not in ln and "inner" not in ln
    ]


def test_renames_touch_the_plan_only():
    text = SOFTMAX_REPLY.read_text(encoding="utf-8")
    renamed = kb.adapt_reply(text, kb.PAIRINGS["level1/23_Softmax"].renames)
    before, after = parse_reply(text), parse_reply(renamed)
    assert after.source == before.source
    launch = after.plan.launches[0]
    assert launch.grid == ("batch_size",)
    assert [a.text for a in launch.args] == ["x", "out", "dim"]
    tanh = kb.adapt_reply(TANH_REPLY.read_text(encoding="utf-8"), {"features": "dim"})
    assert [a.text for a in parse_reply(tanh).plan.launches[0].args][2] == "batch_size * dim"
    with pytest.raises(kb.BenchError, match="no ```json"):
        kb.adapt_reply("no plan here", {"a": "b"})


def test_arguments_and_their_mistakes():
    args = kb.parse_args([])
    assert args.problem == "level1/26_GELU_"
    assert Path(args.kernelbench) == ROOT / ".kernelbench"
    assert (args.correct_trials, args.perf_trials) == (kb.KB_CORRECT_TRIALS, kb.KB_PERF_TRIALS) == (5, 100)
    args = kb.parse_args(["--correct-trials", "2", "--perf-trials", "20", "--rename", "features=dim"])
    assert (args.correct_trials, args.perf_trials) == (2, 20)
    assert kb.parse_renames(args.rename) == {"features": "dim"}
    with pytest.raises(SystemExit):
        kb.parse_args(["--perf-trials", "0"])
    with pytest.raises(kb.BenchError, match="OLD=NEW"):
        kb.parse_renames(["features"])


def test_no_checkout_is_one_line(tmp_path, capsys):
    assert kb.main(["--kernelbench", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bench/kernelbench_copy.sh" in err


def test_no_gpu_is_one_line_before_anything_runs(tmp_path, capsys):
    checkout = fake_checkout(tmp_path / "checkout")
    out = tmp_path / "out"
    # GPU 99 exists on no machine, so this holds on the GPU host too.
    assert kb.main(["--kernelbench", str(checkout), "--gpu", "99", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no NVIDIA GPU 99" in err and "--dry-run" in err
    assert not out.exists()
    assert kb.main(["--kernelbench", str(checkout), "--problem", "level1/nope"]) == 2
    assert "level1/nope" in capsys.readouterr().err


def test_dry_run_imports_the_file_and_our_side_compiles_the_same_reply(dry_run, gelu_task):
    assert (
        kb.reply_cuda_of((dry_run / "model_new.py").read_text(encoding="utf-8"))
        == parse_reply((dry_run / "reply.md").read_text(encoding="utf-8")).source
    )
    # Our side's compile of the very reply (NVRTC, no GPU needed), read as the bench reads eval --json.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuda_llm",
            "eval",
            str(gelu_task),
            str(dry_run / "reply.md"),
            "--compile-only",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert kb.ours_summary(json.loads(done.stdout))["status"] == "compiled", done.stderr
    assert "16x1000" in kb.what_ours_checks(gelu_task)


def test_kernelbench_loads_by_path_with_placeholders_for_what_it_never_calls(tmp_path):
    pkg = tmp_path / "src" / "kernelbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import utils\n", encoding="utf-8")
    (pkg / "utils.py").write_text(
        "from dotenv import load_dotenv\nload_dotenv()\nfrom litellm import completion\nimport json\n",
        encoding="utf-8",
    )
    (pkg / "eval.py").write_text("from . import utils\nVALUE = 42\n", encoding="utf-8")
    probe = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        from pathlib import Path
        from bench import kernelbench_side_by_side as kb
        installed = {{m: importlib.util.find_spec(m) is not None for m in kb.KB_UNUSED_IMPORTS}}
        ev, stood_in = kb.load_kernelbench(Path({str(tmp_path)!r}))
        try:
            ev.utils.completion()
            called = "ran"
        except RuntimeError as exc:
            called = str(exc)
        print(json.dumps({{"value": ev.VALUE, "stood_in": stood_in, "installed": installed, "called": called}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["value"] == 42
    assert got["stood_in"] == [m for m, present in got["installed"].items() if not present]
    if "litellm" in got["stood_in"]:
        assert "not installed" in got["called"]


def test_a_childs_memory_and_time_limit_are_its_own():
    # The child holds its 300 MB for a second: where this test process's own peak is higher (an xdist
    # worker's), the child's rusage cannot tell its own peak from this one's, and the polled VmHWM
    # (every 0.2 s) is the figure.
    hold = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); print(len(b)); time.sleep(1)"
    big = kb.run_child([sys.executable, "-c", hold], timeout_s=60)
    assert big.rc == 0 and big.stdout.strip() == str(300 * 2**20)
    assert big.peak_rss_mib is not None and big.peak_rss_mib >= 300
    small = kb.run_child([sys.executable, "-c", "print(1)"], timeout_s=60)
    assert small.peak_rss_mib is not None and small.peak_rss_mib < 300
    stuck = kb.run_child([sys.executable, "-c", "import signal; signal.pause()"], timeout_s=0.5)
    assert stuck.timed_out and stuck.rc == -9


def test_the_table_names_both_sides_figures_and_checks():
    run = kb.ChildRun(["x"], wall_s=100.0, rc=0, peak_rss_mib=14000.0, tree_rss_mib=15000.0)
    imported = kb.ChildRun(["i"], wall_s=8.0, rc=0, peak_rss_mib=900.0)
    ours = kb.ChildRun(["e"], wall_s=12.0, rc=0, peak_rss_mib=1500.0, tree_rss_mib=2500.0)
    kb_rec = {
        "device": "GPU A",
        "import_s": 4.0,
        "eval_s": 90.0,
        "compile_s": 40.0,
        "timing_s": 1.5,
        "result": {
            "compiled": True,
            "correctness": True,
            "runtime": 5.02,
            "ref_runtime": 3.01,
            "runtime_stats": {"min": 4.9},
            "metadata": {"correctness_trials": "(5 / 5)"},
        },
    }
    ours_rec = {"device": "GPU A", "status": "correct", "cases": 4, "median_us": 5010.0, "speedup": 0.6}
    rows = dict((r[0], r[1:]) for r in kb.comparison_rows(run, kb_rec, imported, ours, ours_rec, "GPU A", "K", "O"))
    assert rows["kernel latency"][0].startswith("mean 5020 us") and rows["kernel latency"][1].startswith("median 5010")
    assert "0.60x" in rows["eager and speedup"][0] and "0.60x eager" in rows["eager and speedup"][1]
    assert rows["wall"][1].startswith("20.0 s")
    assert rows["peak host RSS, largest process"][0] == "13.67 GiB"
    assert rows["peak host RSS, largest process"][1].startswith("1.46 GiB")
    assert "(5 / 5)" in rows["verdict"][0] and rows["checks"] == ("K", "O")
    # A side that produced nothing shows dashes, not figures.
    empty = dict((r[0], r[1:]) for r in kb.comparison_rows(run, {}, imported, ours, {}, None, "K", "O"))
    assert empty["kernel latency"] == ("mean - (min -)", "-")


def test_kernelbenchs_result_becomes_json_with_its_stats_kept_and_its_exceptions_as_text():
    pydantic = pytest.importorskip("pydantic")

    class KernelExecResult(pydantic.BaseModel):  # KernelBench's fields (src/kernelbench/eval.py)
        compiled: bool = False
        correctness: bool = False
        metadata: dict = pydantic.Field(default_factory=dict)
        runtime: float = -1.0
        runtime_stats: dict = pydantic.Field(default_factory=dict)

    result = KernelExecResult(
        compiled=True,
        metadata={"runtime_error": RuntimeError("illegal memory access"), "correctness_trials": "(0 / 5)"},
        runtime_stats={"mean": 5.02, "min": 4.9},
    )
    record = kb.result_record(result)
    assert record is not None and json.loads(json.dumps(record)) == record
    assert record["runtime_stats"]["min"] == 4.9
    assert record["metadata"]["runtime_error"] == "illegal memory access"
    assert kb.result_record(None) is None


def test_the_fields_read_of_eval_json_exist():
    # ours_summary reads these by name from `cuda-llm eval --json` (serialize.dump of the dataclasses).
    import dataclasses

    from cuda_llm.engine.gpu.protocol import Timing, ValidationReport
    from cuda_llm.engine.judge.judgement import Judgement
    from cuda_llm.engine.judge.metrics import Figures

    def names(cls: type) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    assert {"status", "message", "timing", "figures", "validation"} <= names(Judgement)
    assert {"median_us", "samples", "mode"} <= names(Timing)
    assert {"speedup", "roofline_share"} <= names(Figures)
    assert "cases" in names(ValidationReport)


def test_a_whole_run_with_both_sides_children_stood_in(tmp_path, monkeypatch, capsys):
    """main's glue on the CPU: the import runs for real; the eval and KernelBench children are replaced
    by what they write (the GPU host runs them), after their command lines are checked."""
    checkout = fake_checkout(tmp_path / "checkout")
    real_run_child = kb.run_child
    commands: list[list[str]] = []

    def fake_run_child(argv: list[str], timeout_s: float) -> kb.ChildRun:
        commands.append(argv)
        if argv[3:5] == ["tasks", "import"]:
            return real_run_child(argv, timeout_s)
        if argv[3] == "eval":
            task, reply = Path(argv[4]), Path(argv[5])
            assert (task / "task.toml").is_file() and reply.is_file() and argv[6:] == ["--json", "--gpu", "0"]
            record = {
                "device": "GPU A",
                "judgement": {
                    "status": "correct",
                    "message": "correct on 4 cases",
                    "timing": {"median_us": 5010.0, "samples": 40, "mode": "events"},
                    "figures": {"speedup": 0.6, "roofline_share": 0.5},
                    "validation": {"cases": [{}, {}, {}, {}]},
                },
                "phases_s": {"compile": 0.05},
            }
            return kb.ChildRun(argv, wall_s=12.0, rc=0, peak_rss_mib=1500.0, stdout=json.dumps(record))
        child = kb.parse_args(argv[3:])
        assert child.child_kb and Path(child.problem_path).is_file()
        assert kb.reply_cuda_of(Path(child.modelnew).read_text(encoding="utf-8")).startswith('extern "C"')
        assert (child.correct_trials, child.perf_trials, child.gpu) == (2, 7, 0)
        result = {"compiled": True, "correctness": True, "runtime": 5.02, "ref_runtime": 3.01, "metadata": {}}
        Path(child.child_out).write_text(json.dumps({"device": "GPU A", "result": result}), encoding="utf-8")
        return kb.ChildRun(argv, wall_s=100.0, rc=0, peak_rss_mib=14000.0)

    monkeypatch.setattr(kb, "gpu_name", lambda index: "GPU A (driver 1)")
    monkeypatch.setattr(kb, "run_child", fake_run_child)
    out, figures = tmp_path / "out", tmp_path / "kb.json"
    argv = ["--kernelbench", str(checkout), "--out", str(out), "--json", str(figures)]
    assert kb.main([*argv, "--correct-trials", "2", "--perf-trials", "7"]) == 0
    assert [c[2:4] for c in commands] == [
        ["cuda_llm", "tasks"],
        ["cuda_llm", "eval"],
        ["bench.kernelbench_side_by_side", "--child-kb"],
    ]
    printed = capsys.readouterr().out
    assert "mean 5020 us" in printed and "median 5010 us" in printed and "0.60x eager" in printed
    assert "2 trials at the file's size only" in printed and "4 sizes (5x5 13x13 5x333 16x1000)" in printed
    saved = json.loads(figures.read_text(encoding="utf-8"))
    assert (
        saved["ours"]["record"]["median_us"] == 5010.0 and saved["kernelbench"]["record"]["result"]["runtime"] == 5.02
    )
    assert (out / "ours_eval.json").is_file() and (out / "kernelbench.log").is_file()
