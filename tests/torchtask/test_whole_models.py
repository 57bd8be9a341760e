"""Whole models through `tasks import` and the coverage run over a folder of them.

tests/torchtask/models/ holds small module files of our own, one per kind of level-3 trouble
(BatchNorm in training mode, a recurrent layer, a constructor reading a value, a layer random in
training, a file name longer than a task name). The coverage bench imports the folder once for
the whole module (two at a time), and the tests read its table and the tasks it kept. The tests
of the byte count, the names and the messages need no PyTorch."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from cuda_llm.engine.core.errors import TaskFileError, UserError
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.scaffold import MAX_NAME_CHARS
from cuda_llm.engine.torchtask.byte_count import byte_count
from cuda_llm.engine.torchtask.coverage import CoverageRow, cause, causes, markdown, module_files, totals
from cuda_llm.engine.torchtask.inspect_module import ModuleFacts, TensorFacts, naming_the_file
from cuda_llm.engine.torchtask.writer import default_name, write_task

MODELS = Path(__file__).resolve().parent / "models"
LONG = "99_a_file_name_far_longer_than_any_task_name_may_be__strided__padded__grouped__dilated.py"


def facts(source: Path, params: tuple[TensorFacts, ...] = ()) -> ModuleFacts:
    if not source.exists():
        source.write_text('"""A module."""\n', encoding="utf-8")
    return ModuleFacts(
        source=source,
        sizes={"batch": 16, "n": 300},
        fixed={},
        validation=({"batch": 5, "n": 13},),
        inputs=(TensorFacts("x", "float32", ("batch", "n")),),
        params=params,
        outputs=(TensorFacts("out", "float32", ("batch", "n - 2")),),
        flops="0",
    )


# --- without PyTorch ---------------------------------------------------------------------------


def test_a_long_file_name_gives_a_valid_stable_task_name(tmp_path):
    long_a = tmp_path / LONG
    long_b = tmp_path / LONG.replace("dilated", "grouped")  # the same first 60 characters
    for p in (long_a, long_b):
        p.write_text('"""m"""\n', encoding="utf-8")
    a, b = default_name(facts(long_a)), default_name(facts(long_b))
    assert len(a) <= MAX_NAME_CHARS and re.fullmatch(r"[A-Za-z_]\w*", a)
    assert a.startswith("module_99_a_file_name_far_longer")
    assert a != b and a == default_name(facts(long_a))  # apart, and the same every time
    folder = write_task(facts(long_a), tmp_path / "tasks")
    assert folder.name == a
    # A short name is kept as it was.
    short = tmp_path / "13_Matmul.py"
    short.write_text('"""m"""\n', encoding="utf-8")
    assert default_name(facts(short)) == "module_13_Matmul"


def test_the_byte_count_of_a_whole_model_is_short_and_exact(tmp_path):
    # A VGG-sized list: 32 parameters of fixed shapes, an input and an output moving with the sizes.
    params = tuple(
        TensorFacts(f"w{i}", "float32", (str(64 + i), str(3 + i), "3", "3"), f"f.{i}.weight") for i in range(32)
    )
    tensors = [(4, ("batch", "n")), *((4, t.shape) for t in params), (4, ("batch", "n - 2")), (8, ("2 * n + 1",))]
    text = byte_count(tensors)
    assert len(text) < 100, text
    for env in ({"batch": 16, "n": 300}, {"batch": 5, "n": 13}):
        exact = sum(size * np.prod([expr.evaluate(d, env) for d in shape]) for size, shape in tensors)
        assert expr.evaluate(text, env) == exact
    # Written as a task, the count loads (term by term it was over the expression limit).
    folder = write_task(facts(tmp_path / "vgg.py", params), tmp_path / "tasks")
    bytes_text = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))["roofline"]["bytes"]
    assert len(bytes_text) < expr.MAX_EXPRESSION_CHARS
    assert byte_count([(4, ("n", "n - 1")), (4, ("0 - n",))]) == "4 * n * n - 8 * n"


def test_a_byte_count_of_many_sizes_is_factored_to_fit():
    # An inception module: seven channel counts, each branch's weights and outputs a product of two
    # of them: collected, 492 characters; with the common factors out, well under the limit.
    c = ["c_in", "c1", "r3", "c3", "r5", "c5", "pool"]
    tensors = [(4, ("batch", "c_in", "h", "w"))]
    tensors += [(4, ("batch", o, "h", "w")) for o in ("c1", "c3", "c5", "pool")]
    tensors += [
        (4, (o, i, str(k), str(k)))
        for o, i, k in (
            ("c1", "c_in", 1),
            ("r3", "c_in", 1),
            ("c3", "r3", 3),
            ("r5", "c_in", 1),
            ("c5", "r5", 5),
            ("pool", "c_in", 1),
        )
    ]
    tensors += [(4, (o,)) for o in c[1:]]
    collected = byte_count(tensors)
    text = byte_count(tensors, limit=len(collected) - 1)
    assert text != collected and len(text) < 0.7 * len(collected), text
    for seed in range(3):
        env = {n: 3 + 7 * seed + i for i, n in enumerate([*c, "batch", "h", "w"])}
        exact = sum(size * np.prod([expr.evaluate(d, env) for d in shape]) for size, shape in tensors)
        assert expr.evaluate(text, env) == exact


def test_a_model_with_more_tensors_than_one_launch_passes_gets_a_stub_per_share(tmp_path, capsys):
    from cuda_llm.app.cli.main import main
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.task.plan import MAX_ARGS, MAX_LAUNCHES

    params = tuple(TensorFacts(f"w{i}", "float32", ("n",), f"blocks.{i}.weight") for i in range(150))
    folder = write_task(facts(tmp_path / "swin.py", params), tmp_path / "tasks")
    task = load_task(folder)
    plan = json.loads((folder / "baseline.json").read_text(encoding="utf-8"))["launches"]
    assert len(plan) == 3 and all(len(la["args"]) <= MAX_ARGS for la in plan)
    bound = [a for la in plan for a in la["args"] if a not in ("batch", "n")]
    assert bound == [b.name for b in task.buffers]  # every buffer once, in task.toml's order
    assert all(la["args"][-2:] == ["batch", "n"] for la in plan)  # each share then the sizes
    assert len(task.baseline_plan.launches) == 3
    code = main(["eval", str(folder), "baseline", "--compile-only"])
    assert code == 0, capsys.readouterr().out
    # Past what a plan can pass: one line naming the file and what to do.
    many = tuple(TensorFacts(f"w{i}", "float32", ("n",), f"b.{i}.w") for i in range(MAX_LAUNCHES * MAX_ARGS))
    with pytest.raises(UserError, match=r"^huge.py has 1026 tensors .* import a part of the model"):
        write_task(facts(tmp_path / "huge.py", many), tmp_path / "tasks")


def test_a_task_the_format_cannot_hold_is_refused_in_the_modules_terms(tmp_path):
    source = tmp_path / "odd.py"
    source.write_text('"""m"""\n', encoding="utf-8")
    weight = TensorFacts("proj_weight", "float32", ("n", "depth"), "proj.weight")  # no size is named depth
    root = tmp_path / "tasks"
    with pytest.raises(UserError) as refused:
        write_task(facts(source, (weight,)), root)
    line = str(refused.value)
    assert line.startswith("odd.py cannot become a task: self.proj.weight cannot be expressed (")
    assert "task.toml" not in line and "buffers." not in line and str(tmp_path) not in line
    assert not isinstance(refused.value, TaskFileError) and not any(root.iterdir())


def test_every_refusal_starts_with_its_file():
    assert naming_the_file(Path("a/m.py"), "forward raised X") == "m.py: forward raised X"
    assert naming_the_file(Path("m.py"), "m.py fails to import") == "m.py fails to import"


def test_rows_are_totalled_and_grouped_by_cause():
    rows = [
        CoverageRow("level1", "1_a.py", "module_1_a", None, 4.0),
        CoverageRow("level1", "2_b.py", None, "2_b.py: forward is random: layer d (Dropout, p=0.5) ...", 6.0),
        CoverageRow("level1", "3_c.py", None, "3_c.py: forward is random: layer e (Dropout, p=0.1) ...", 8.0),
        CoverageRow("level2", "1_d.py", "module_1_d", None, 2.0),
    ]
    (one, two) = totals(rows)
    assert (one.folder, one.files, one.imported, one.median_s, one.max_s) == ("level1", 3, 1, 6.0, 8.0)
    assert one.median_cpu_s is None  # imports run side by side: no child's own CPU time
    assert (two.files, two.imported) == (1, 1)
    assert cause(rows[1]) == cause(rows[2]) == "forward is random: layer X (Dropout, p=N) ..."
    zero_d = "self.bn1.num_batches_tracked cannot be expressed (must list at least one dimension); change that"
    assert cause(CoverageRow("l", "9_x.py", None, f"9_x.py cannot become a task: {zero_d}", 1)) == (
        "FILE cannot become a task: self.X cannot be expressed (must list at least one dimension);"
    )
    assert [(n, files) for _, n, files in causes(rows)] == [(2, ["level1/2_b.py", "level1/3_c.py"])]
    table = markdown(rows)
    assert "| level1 | 3 | 1 | 2 | 6.0 | 8.0 | - |" in table
    assert "| level2 | 1_d.py | imported as module_1_d | 2.0 |" in table


def test_one_import_at_a_time_gives_its_childs_cpu_time(tmp_path):
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.coverage import import_one

    row = import_one(MODELS / "needs_a_package.py", tmp_path, cpu=True)
    assert row.refusal and row.cpu_s is not None and row.cpu_s > 0
    assert import_one(MODELS / "needs_a_package.py", tmp_path).cpu_s is None


def test_module_files_come_in_the_problem_sets_order(tmp_path):
    for name in ("10_b.py", "2_a.py", "_private.py", "notes.txt", "1_c.py"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert [p.name for p in module_files(tmp_path)] == ["1_c.py", "2_a.py", "10_b.py"]


# --- with PyTorch: the coverage bench over tests/torchtask/models ------------------------------


@pytest.fixture(scope="module")
def coverage(tmp_path_factory) -> tuple[dict[str, list[str]], Path, str]:
    """The bench run once over the models: its per-file rows, the tasks' folder, the whole table."""
    pytest.importorskip("torch")
    from bench import import_coverage

    out = tmp_path_factory.mktemp("coverage")
    assert (
        import_coverage.main([str(MODELS), "--jobs", "2", "--dir", str(out / "tasks"), "--out", str(out / "t.md")]) == 0
    )
    table = (out / "t.md").read_text(encoding="utf-8")
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) == 4 and cells[0] == "models":
            rows[cells[1]] = cells
    return rows, out / "tasks" / "models", table


def test_the_coverage_run_has_a_row_per_file_and_totals(coverage):
    rows, _tasks, table = coverage
    assert sorted(rows) == sorted(p.name for p in module_files(MODELS))
    assert "| models | 7 | 4 | 3 |" in table and "| - |" in table  # two at a time: no CPU time per import
    assert "models: 7 files" in table  # the folder and its file count head the table
    for name, (_folder, _file, result, seconds) in rows.items():
        assert result.startswith(("imported as ", "refused: ")), name
        assert float(seconds) > 0


def test_a_layer_random_in_training_is_refused_naming_it(coverage):
    rows, _tasks, table = coverage
    result = rows["dropout_in_training.py"][2]
    assert result.startswith("refused: dropout_in_training.py: forward is random: layer head.1 (Dropout, p=0.25)")
    assert "set its p to 0 in the file" in result
    assert "| 1 | forward is random: layer X (Dropout, p=N) drops random elements in training mode;" in table


def test_a_result_whose_shape_depends_on_values_is_refused(coverage):
    rows, _tasks, _table = coverage
    result = rows["value_dependent_shape.py"][2]
    assert result.startswith(
        "refused: value_dependent_shape.py: the shape of forward's result depends on the input values"
    )
    assert "make forward return a fixed shape" in result


def test_a_missing_package_is_named_with_how_to_install_it(coverage):
    rows, _tasks, _table = coverage
    assert rows["needs_a_package.py"][2] == (
        "refused: needs_a_package.py fails to import: it needs the Python package 'a_package_nobody_installed', "
        "which is not installed where cuda-llm runs; install it (pip install a_package_nobody_installed) and "
        "import the file again"
    )


def test_a_long_file_name_imports(coverage):
    rows, tasks, _table = coverage
    name = rows[LONG][2].removeprefix("imported as ")
    assert len(name) <= MAX_NAME_CHARS and (tasks / name / "task.toml").is_file()


def _module(folder: Path):
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.torchtask.runtime import ImportedModule

    return load_task(folder), ImportedModule(folder)


def test_batchnorm_normalises_with_the_batchs_statistics(coverage):
    import torch
    import torch.nn.functional as F

    rows, tasks, _table = coverage
    task, module = _module(tasks / rows["batchnorm_cnn.py"][2].removeprefix("imported as "))
    assert "runs in training mode" in task.description and "layers (bn)" in task.description
    case = task.validation[0]
    sizes = task.params(case)
    inputs = module.generate(sizes, np.random.default_rng(3))
    kept = {k: v.copy() for k, v in inputs.items()}
    got = module.reference(inputs, sizes)["out"]
    # The running buffers are inputs forward would update: the reference leaves them as generated,
    # at float64 and at the inputs' own dtype (where its tensors share the arrays' memory).
    module.reference(inputs, sizes, np.float32)
    assert all(np.array_equal(kept[k], inputs[k]) for k in kept)
    t = {k: torch.from_numpy(v).double() for k, v in kept.items()}
    conv = F.conv2d(t["x"], t["conv_weight"], t["conv_bias"], padding=1)

    def bn(training: bool) -> np.ndarray:
        y = F.batch_norm(
            conv, t["bn_running_mean"].clone(), t["bn_running_var"].clone(), t["bn_weight"], t["bn_bias"], training
        )
        return torch.relu(y).numpy()

    assert np.allclose(got, bn(True), rtol=1e-9, atol=1e-12)
    assert not np.allclose(got, bn(False), rtol=1e-3)  # the running statistics would give another answer


def test_a_recurrent_model_and_a_constructor_reading_a_value_import(coverage):
    rows, tasks, _table = coverage
    for file, out_shape in (
        ("gru_with_state.py", ("4", "batch_size", "hidden_size")),
        ("item_in_constructor.py", ("8", "n")),
    ):
        task, module = _module(tasks / rows[file][2].removeprefix("imported as "))
        (out,) = [b for b in task.buffers if b.role == "output"]
        assert out.shape == out_shape, file
        case = task.validation[0]
        sizes = task.params(case)
        result = module.reference(module.generate(sizes, np.random.default_rng(0)), sizes)["out"]
        assert result.shape == tuple(expr.evaluate(d, dict(sizes)) for d in out.shape)
        assert np.isfinite(result).all()


@pytest.mark.parametrize(
    ("layer", "kwargs"),
    [
        ("LSTM", {"batch_first": True}),
        ("LSTM", {"proj_size": 3, "bidirectional": True}),
        ("GRU", {"bidirectional": True}),
        ("RNN", {}),
    ],
)
def test_recurrent_layers_give_their_shapes_on_the_meta_device(layer, kwargs):
    torch = pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.meta_layers import shapes_only

    def flat(result):
        out, state = result
        return [out.shape, *([s.shape for s in state] if isinstance(state, tuple) else [state.shape])]

    real = getattr(torch.nn, layer)(8, 6, 2, **kwargs)
    with torch.device("meta"):
        probe = getattr(torch.nn, layer)(8, 6, 2, **kwargs)
    shapes_only(probe)
    for x in (torch.rand(4, 5, 8), torch.rand(5, 8)):  # batched and unbatched
        expected = real(x)
        assert flat(probe(x.to("meta"))) == flat(expected)
        state = expected[1]
        given = tuple(s.to("meta") for s in state) if isinstance(state, tuple) else state.to("meta")
        assert flat(probe(x.to("meta"), given)) == flat(expected)
    with pytest.raises(RuntimeError, match="input_size"):
        probe(torch.rand(4, 5, 7, device="meta"))
    wrong = torch.rand(3, 4, 6, device="meta")  # one layer's state for a two-layer stack
    with pytest.raises(RuntimeError, match="h0 has shape"):
        probe(torch.rand(4, 5, 8, device="meta"), (wrong, wrong) if layer == "LSTM" else wrong)


REPLIES = MODELS / "replies"


@pytest.mark.parametrize("reply", ["batchnorm_cnn.md", "batchnorm_cnn.running_stats.md"])
def test_the_batchnorm_replies_compile_and_bind(coverage, capsys, reply):
    from cuda_llm.app.cli.main import main

    _rows, tasks, _table = coverage
    code = main(["eval", str(tasks / "batchnorm_cnn"), str(REPLIES / reply), "--compile-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict:  compiled" in out


def test_batchnorm_gives_its_shape_on_the_meta_device_and_checks_its_input(monkeypatch):
    torch = pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.meta_layers import shapes_only

    def decomposed(*args, **kwargs):
        raise AssertionError("the probe ran BatchNorm's meta decomposition (seconds per model)")

    monkeypatch.setattr(torch.nn.functional, "batch_norm", decomposed)
    monkeypatch.setattr(torch.nn.functional, "hardtanh", decomposed)

    for layer, shape in (
        ("BatchNorm1d", (4, 6)),
        ("BatchNorm1d", (4, 6, 5)),
        ("BatchNorm2d", (4, 6, 5, 3)),
        ("BatchNorm3d", (2, 6, 3, 3, 3)),
    ):
        with torch.device("meta"):
            model = torch.nn.Sequential(getattr(torch.nn, layer)(6))
        shapes_only(model)
        x = torch.rand(shape, device="meta")
        assert model(x).shape == shape
        with pytest.raises(RuntimeError, match="running_mean should contain 7 elements"):
            model(torch.rand((shape[0], 7, *shape[2:]), device="meta"))
        with pytest.raises(ValueError, match="expected"):
            model(torch.rand(shape[:1], device="meta"))  # the wrong rank
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        model(torch.rand((1, 6, 1, 1, 1), device="meta"))  # one value per channel: no batch statistics
    relu6 = torch.nn.Sequential(torch.nn.ReLU6(inplace=True), torch.nn.Hardtanh(-2.0, 2.0))
    shapes_only(relu6)
    assert relu6(torch.rand(3, 4, device="meta")).shape == (3, 4)


def test_layers_random_in_training_are_named_and_others_pass():
    torch = pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.training import batch_statistics_layers, random_layer

    nn = torch.nn
    random = {
        "layer 1 (Dropout, p=0.25)": nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.25)),
        "layer rnn (LSTM, dropout=0.1)": nn.ModuleDict({"rnn": nn.LSTM(4, 4, 2, dropout=0.1)}),
        "layer 0.self_attn (MultiheadAttention, dropout=0.1)": nn.Sequential(
            nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        ),
        "layer Model (RReLU)": nn.RReLU(),
    }
    random["layer 0.self_attn (MultiheadAttention, dropout=0.1)"][0].self_attn.dropout = 0.1
    for expected, model in random.items():
        assert (random_layer(model) or "").startswith(expected), model
        assert random_layer(model.eval()) is None  # in inference mode the same layers are not random
    calm = nn.Sequential(nn.Dropout(0.0), nn.LSTM(4, 4, 2), nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0))
    assert random_layer(calm) is None
    model = nn.Sequential(
        nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.InstanceNorm2d(3), nn.BatchNorm1d(3, track_running_stats=False)
    )
    assert batch_statistics_layers(model) == ["1"]  # running statistics it could have used instead
    assert batch_statistics_layers(model.eval()) == []


# --- on a GPU: the training-mode rule, eager and candidates alike --------------------------------


@pytest.fixture(scope="module")
def batchnorm_task(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.importer import import_module

    return import_module(MODELS / "batchnorm_cnn.py", tmp_path_factory.mktemp("bn")).folder


@pytest.mark.gpu
def test_on_a_gpu_batchnorm_in_training_mode_judges_alike(gpu, batchnorm_task):
    # Eager (the module as built: training mode) agrees with the float64 reference; a kernel that
    # normalises with the batch's statistics is correct, one using the running statistics is wrong.
    task = gpu.task(str(batchnorm_task))
    judge = gpu.env.judge(task, gpu.settings)
    base = gpu.run(judge.baseline_judgement())
    assert base.status == "correct", base.message
    verdicts = {}
    for reply in ("batchnorm_cnn.md", "batchnorm_cnn.running_stats.md"):
        cand = judge.parse(reply, (REPLIES / reply).read_text(encoding="utf-8"), origin="user")
        verdicts[reply] = gpu.run(judge.judge(cand, profile=False))
    assert verdicts["batchnorm_cnn.md"].status == "correct", verdicts["batchnorm_cnn.md"].message
    assert verdicts["batchnorm_cnn.running_stats.md"].status == "wrong"
    print(f"batchnorm_cnn on {base.device}: eager {base.timing.median_us:.1f} us; {verdicts}")
