"""The task library on the CPU: every task loads; its generator and reference run at every
validation size; its tolerance passes emulated fp32 code with a 10x margin and rejects fp16 (and,
where tensor cores tempt, tf32) shortcuts and plainly wrong outputs; `tasks new` makes a task that
works; malformed task files fail with one line naming the file and the field."""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cuda_llm.engine.core.errors import TaskFileError, UserError
from cuda_llm.engine.gpu.compare import allowed_error, compare_output
from cuda_llm.engine.task import bfloat16, expr
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.library import TaskLibrary, builtin_tasks_dir
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.model import SizeCase, Task
from cuda_llm.engine.task.reference import Reference, case_seed, load_reference
from cuda_llm.engine.task.scaffold import scaffold_task

LIBRARY = (
    "black_scholes",
    "conv1d",
    "conv2d",
    "dot_product",
    "gemm_bf16",
    "gemm_fp16",
    "histogram",
    "layernorm",
    "leaky_relu",
    "matmul",
    "matrix_copy",
    "matrix_transpose",
    "monte_carlo_integration",
    "nbody",
    "prefix_sum",
    "reduction_sum",
    "reverse_array",
    "rmsnorm_bf16",
    "softmax",
    "softmax_attention",
    "spmv_csr",
    "vector_add",
)

# Where each task's tolerance is put to the test: a validation size big enough to be
# representative (for the sums, past the point where a float16 accumulator overflows, which is
# how half precision fails them) and small enough that every emulation runs in well under a second.
MARGIN_CASE: dict[str, dict[str, int]] = {
    "black_scholes": {"n": 65537},
    "conv1d": {"n": 65537, "k": 257},
    "conv2d": {"n": 3, "c_in": 13, "c_out": 7, "h": 31, "w": 29},
    "dot_product": {"n": 1048579},
    "gemm_bf16": {"M": 257, "N": 129, "K": 500},
    "gemm_fp16": {"M": 257, "N": 129, "K": 500},
    "histogram": {"n": 65537},
    "layernorm": {"rows": 1031, "cols": 768},
    "leaky_relu": {"n": 65537},
    "matmul": {"M": 257, "N": 129, "K": 500},
    "matrix_copy": {"rows": 1025, "cols": 1023},
    "matrix_transpose": {"rows": 33, "cols": 65},
    "monte_carlo_integration": {"n": 1048579},
    "nbody": {"n": 1000},
    "prefix_sum": {"n": 65537},
    "reduction_sum": {"n": 1048579},
    "reverse_array": {"n": 65537},
    "rmsnorm_bf16": {"rows": 1031, "cols": 768},
    "softmax": {"rows": 1031, "cols": 513},
    "softmax_attention": {"bh": 3, "sq": 77, "sk": 129, "d": 40},
    "spmv_csr": {"rows": 65537, "cols": 40000, "nnz": 1000003},
    "vector_add": {"n": 65537},
}
# Tasks whose natural fast path is a matrix product, where TF32 tensor cores are the tempting
# shortcut that fp32 accuracy rules out.
TF32_TASKS = ("matmul", "conv1d", "conv2d", "softmax_attention")
# The correct-fp32 emulation must stay this far inside the bound (a 10x margin).
FP32_MARGIN = 0.1
# A bf16 output's own rounding (up to 2^-8 of an element) is part of every correct result: the bound of a
# bf16 task leaves 2x over it, room for a second rounding, not 10x.
BF16_OUTPUT_MARGIN = 0.5
# Tasks whose outputs a kernel stores as bf16: their fp32 emulation is rounded to bf16 before judging.
BF16_TASKS = tuple(n for n in LIBRARY if n.endswith("_bf16"))
# H100 figures the sizes are chosen against (shared/notes/timing.md): measured copy bandwidth and
# fp32 / fp16 tensor peaks; the timing size's roofline floor must be at least ~100 us.
H100_BYTES_PER_S = 3.0e12
H100_PEAKS = {"fp32": 65e12, "fp16_tensor": 800e12, "none": float("inf")}
MIN_FLOOR_S = 100e-6
# Everything a timing-size run allocates must fit an 8 GB card with room to spare.
MAX_TIMING_BYTES = 2_000_000_000


@functools.cache
def _task(name: str) -> Task:
    return load_task(builtin_tasks_dir() / name)


@functools.cache
def _reference(name: str) -> Reference:
    return load_reference(_task(name))


def _case(task: Task, sizes: dict[str, int]) -> SizeCase:
    for case in task.validation:
        if case.as_dict() == sizes:
            return case
    raise AssertionError(f"{task.name}: {sizes} is not one of its validation sizes")


def _is_exact(task: Task) -> bool:
    return task.tolerance.scale == "exact"


@dataclass(frozen=True)
class _Margin:
    """A task's margin case: fresh inputs, the float64 outputs and the error scale."""

    task: Task
    ref: Reference
    case: SizeCase
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    scale: dict[str, np.ndarray] | None

    def judge(self, got: dict[str, np.ndarray]) -> tuple[bool, float]:
        """(every output passes, the worst error as a share of its bound)."""
        passed, worst = True, 0.0
        for b in self.task.outputs:
            scale = None if self.scale is None else self.scale[b.name]
            result = compare_output(
                b.name, self.expected[b.name], got[b.name], self.task.tolerance, scale, dtype=b.dtype
            )
            passed &= result.passed
            worst = max(worst, result.worst_ratio)
        return passed, worst

    def emulate(self, dtype: type, inputs: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        # Half precision overflows on purpose in some tasks: the inf/NaN it makes must fail.
        with np.errstate(all="ignore"):
            out = self.ref.outputs(self.inputs if inputs is None else inputs, self.case, dtype)
        # A bf16 output holds what the kernel stores: its bits, rounded once.
        return {k: bfloat16.to_bits(v) if self.task.buffer(k).dtype == "bfloat16" else v for k, v in out.items()}


@functools.cache
def _margin(name: str) -> _Margin:
    task, ref = _task(name), _reference(name)
    case = _case(task, MARGIN_CASE[name])
    inputs = ref.inputs(case, case_seed(task, case, 0))
    return _Margin(task, ref, case, inputs, ref.outputs(inputs, case), ref.error_scale(inputs, case))


def _tf32(array: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 (10 explicit mantissa bits, nearest, ties away), as tensor
    cores read them; other dtypes unchanged."""
    if array.dtype != np.float32:
        return array
    bits = array.view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


# ---------------------------------------------------------------------------- the library


def test_every_task_of_the_library_loads() -> None:
    loaded = list(TaskLibrary((builtin_tasks_dir(),)).load_all())
    broken = [str(t) for t in loaded if isinstance(t, TaskFileError)]
    assert broken == []
    assert sorted(t.name for t in loaded) == sorted(LIBRARY)


@pytest.mark.parametrize("name", LIBRARY)
def test_timing_size_has_a_100us_floor_and_fits_a_small_card(name: str) -> None:
    task = _task(name)
    nbytes, flops = task.bytes_and_flops(task.timing)
    floor = max(nbytes / H100_BYTES_PER_S, flops / H100_PEAKS[task.roofline.peak])
    assert floor >= MIN_FLOOR_S, f"{name}: roofline floor {floor * 1e6:.0f} us at the timing size"
    env = task.env(task.timing)
    scratch = sum(expr.evaluate(s.count, env) * DTYPES[s.dtype].itemsize for s in task.baseline_plan.scratch)
    total = sum(b.nbytes_for(env) for b in task.buffers) + scratch
    assert total <= MAX_TIMING_BYTES, f"{name}: {total / 1e9:.2f} GB of buffers at the timing size"
    assert task.validation[-1] is task.timing
    assert len(task.validation) >= 4, "small, odd validation sizes besides the timing size"


@pytest.mark.parametrize("name", LIBRARY)
def test_generate_and_reference_run_at_every_validation_size(name: str) -> None:
    task, ref = _task(name), _reference(name)
    for case in task.validation:
        if case.is_timing:
            continue
        # Reference.inputs and .outputs check every buffer's dtype, shape and element count.
        inputs = ref.inputs(case, case_seed(task, case, 0))
        for b in task.inputs:
            values = inputs[b.name]
            if values.dtype.kind == "f":
                assert np.isfinite(values).all(), f"{name} {case.label}: {b.name} not finite"
                assert values.any(), f"{name} {case.label}: {b.name} is all zero"
        assert any(inputs[b.name].any() for b in task.inputs), f"{name} {case.label}: all-zero inputs"
        outputs = ref.outputs(inputs, case)
        for b in task.outputs:
            out = outputs[b.name]
            assert np.isfinite(out).all(), f"{name} {case.label}: {b.name} not finite"
            assert (out.dtype.kind == "f") == DTYPES[b.dtype].is_float, f"{name}: {b.name} dtype {out.dtype}"
        scale = ref.error_scale(inputs, case)
        if scale is not None:
            for b in task.outputs:
                s = scale[b.name]
                assert np.isfinite(s).all() and (s >= 0).all(), f"{name} {case.label}: bad error scale"
                # A zero scale with a non-zero expected value would demand bit-exact fp32 results.
                assert (s[outputs[b.name] != 0] > 0).all(), f"{name} {case.label}: zero scale"


@pytest.mark.parametrize("name", LIBRARY)
def test_generate_is_seeded(name: str) -> None:
    task, ref = _task(name), _reference(name)
    case = task.validation[1]
    first = ref.inputs(case, 7)
    again = ref.inputs(case, 7)
    other = ref.inputs(case, 8)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert any(not np.array_equal(first[k], other[k]) for k in first)


# ---------------------------------------------------------------------------- tolerance margins


@pytest.mark.parametrize("name", LIBRARY)
def test_fp32_emulation_passes_with_a_10x_margin(name: str) -> None:
    m = _margin(name)
    passed, worst = m.judge(m.emulate(np.float32))
    margin = BF16_OUTPUT_MARGIN if name in BF16_TASKS else FP32_MARGIN
    assert passed and worst <= margin, f"{name} at {m.case.label}: fp32 reaches {worst:.3g} of the bound"


# fp16 (11 significant bits) is finer than gemm_bf16's own bf16 output: no shortcut there; its
# shortcut, bf16 accumulation, is test_bf16_accumulation_fails.
@pytest.mark.parametrize("name", [n for n in LIBRARY if not _is_exact(_task(n)) and n != "gemm_bf16"])
def test_fp16_emulation_fails(name: str) -> None:
    # For gemm_fp16, whose inputs already are fp16, `dtype` is the accumulator: this is fp16
    # accumulation, the shortcut its contract forbids.
    m = _margin(name)
    passed, worst = m.judge(m.emulate(np.float16))
    assert not passed, f"{name} at {m.case.label}: fp16 passes at {worst:.3g} of the bound"


@pytest.mark.parametrize("name", TF32_TASKS)
def test_tf32_emulation_fails(name: str) -> None:
    m = _margin(name)
    rounded = {k: _tf32(v) for k, v in m.inputs.items()}
    passed, worst = m.judge(m.emulate(np.float32, rounded))
    assert not passed, f"{name} at {m.case.label}: tf32 passes at {worst:.3g} of the bound"


def _poison(array: np.ndarray, dtype: str) -> np.ndarray:
    """The array with its last element still holding the poison the validator writes."""
    out = array.copy()
    poison = DTYPES[dtype].poison
    if poison is None:  # bytes are not poisoned: a NaN-free stand-in the comparison sees as wrong
        out.reshape(-1)[-1] = np.nan if out.dtype.kind == "f" else 0x7F
    else:
        out.reshape(-1).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[out.dtype.itemsize])[-1] = poison
    return out


def _bf16_sum_of_squares(m: _Margin) -> dict[str, np.ndarray]:
    """rmsnorm_bf16 by a kernel with one thread per row whose sum of squares is a bf16 register."""
    x = bfloat16.to_float32(m.inputs["x"])
    w = bfloat16.to_float32(m.inputs["w"])
    ss = np.zeros(x.shape[0], dtype=np.float32)
    for c in range(x.shape[1]):
        ss = bfloat16.round_to_bf16(ss + x[:, c] * x[:, c])
    inv = 1.0 / np.sqrt(ss / x.shape[1] + np.float32(m.task.params(m.case)["eps"]))
    return {"y": bfloat16.to_bits(x * inv[:, None] * w)}


def _bf16_accumulator(m: _Margin) -> dict[str, np.ndarray]:
    """gemm_bf16 by a kernel whose running sums are bf16 registers."""
    c = m.ref.module.accumulate_in_bf16(m.inputs["A"], m.inputs["B"])
    return {"C": bfloat16.to_bits(c)}


@pytest.mark.parametrize(
    ("name", "emulate"), [("rmsnorm_bf16", _bf16_sum_of_squares), ("gemm_bf16", _bf16_accumulator)]
)
def test_bf16_accumulation_fails(name: str, emulate) -> None:
    """The shortcut a bf16 task tempts: the inputs are bf16, so why not the accumulator."""
    m = _margin(name)
    passed, worst = m.judge(emulate(m))
    assert not passed and worst > 2.0, f"{name} at {m.case.label}: bf16 accumulation at {worst:.3g} of the bound"


def _nudge_past_bound(m: _Margin, name: str, array: np.ndarray) -> np.ndarray:
    """The expected output with its middle element moved to twice its allowed error (one unit,
    or the next float, for exact tasks)."""
    out = array.copy()
    flat = out.reshape(-1)
    i = flat.size // 2
    if _is_exact(m.task):
        flat[i] = flat[i] + 1 if flat.dtype.kind != "f" else np.nextafter(flat[i], np.inf)
        return out
    scale = None if m.scale is None else m.scale[name]
    bound = allowed_error(m.expected[name], m.task.tolerance, scale).reshape(-1)
    flat[i] = flat[i] + 2.0 * bound[i]
    return out


@pytest.mark.parametrize("name", LIBRARY)
def test_known_wrong_outputs_fail(name: str) -> None:
    m = _margin(name)
    right = {
        b.name: bfloat16.to_bits(m.expected[b.name])
        if b.dtype == "bfloat16"
        else m.expected[b.name].astype(DTYPES[b.dtype].numpy)
        for b in m.task.outputs
    }
    assert m.judge(right)[0], f"{name}: the reference itself, stored as {m.task.outputs[0].dtype}, fails"
    for b in m.task.outputs:
        zeros = dict(right, **{b.name: np.zeros_like(right[b.name])})
        assert not m.judge(zeros)[0], f"{name}: all-zero {b.name} passes"
        dropped = dict(right, **{b.name: _poison(right[b.name], b.dtype)})
        assert not m.judge(dropped)[0], f"{name}: {b.name} without its last element passes"
        nudged = dict(right, **{b.name: _nudge_past_bound(m, b.name, m.expected[b.name])})
        assert not m.judge(nudged)[0], f"{name}: {b.name} off by twice the bound passes"


# ---------------------------------------------------------------------------- tasks new


def test_scaffolded_task_loads_and_its_reference_runs(tmp_path: Path) -> None:
    folder = scaffold_task("my_kernel", tmp_path / "tasks")
    assert folder == tmp_path / "tasks" / "my_kernel"
    task = load_task(folder)
    ref = load_reference(task)
    assert task.name == "my_kernel"
    assert "my_kernel_kernel" in task.baseline_source
    assert [la.kernel for la in task.baseline_plan.launches] == ["my_kernel_kernel"]
    for case in task.validation[:-1]:
        inputs = ref.inputs(case, case_seed(task, case, 0))
        expected = ref.outputs(inputs, case)
        for dtype, should_pass in ((np.float32, True), (np.float16, False)):
            got = ref.outputs(inputs, case, dtype)
            result = compare_output("y", expected["y"], got["y"], task.tolerance)
            assert result.passed is should_pass, f"{case.label} {np.dtype(dtype)}: {result.worst_ratio}"
            if should_pass:
                assert result.worst_ratio <= FP32_MARGIN


@pytest.mark.parametrize("bad", ["my-task", "2fast", "", "my task", "tâche", "a" * 65])
def test_scaffold_rejects_names_that_are_not_identifiers(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UserError) as info:
        scaffold_task(bad, tmp_path)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_scaffold_refuses_an_existing_folder(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="already exists") as info:
        scaffold_task("taken", tmp_path)
    assert "\n" not in str(info.value)
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


# ---------------------------------------------------------------------------- malformed files


def _copy_of_vector_add(tmp_path: Path) -> Path:
    folder = tmp_path / "vector_add"
    shutil.copytree(builtin_tasks_dir() / "vector_add", folder)
    return folder


def _edit(folder: Path, old: str, new: str) -> None:
    path = folder / "task.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ('summary = "Element-wise sum of two float32 vectors: c = a + b"\n', "", "summary", "missing"),
        ('dtype = "float32"', 'dtype = "float33"', "buffers.a.dtype", "unknown"),
        ('shape = ["n"]', 'shape = ["m"]', "buffers.a.shape[0]", "unknown name"),
        ('scale = "abs"', 'scale = "relative"', "tolerance.scale", "unknown"),
        ("timing = { n = 33554432 }", "timing = { n = 0 }", "sizes.timing.n", "positive"),
    ],
)
def test_malformed_task_file_names_file_and_field(tmp_path: Path, old: str, new: str, field: str, words: str) -> None:
    folder = _copy_of_vector_add(tmp_path)
    _edit(folder, old, new)
    with pytest.raises(TaskFileError) as info:
        load_task(folder)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(folder / "task.toml"))
    assert f": {field}: " in message
    assert words in message


def test_invalid_toml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    folder = _copy_of_vector_add(tmp_path)
    (folder / "task.toml").write_text('name = "vector_add"\n[scalars\nn = 1\n')
    with pytest.raises(TaskFileError) as info:
        load_task(folder)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(folder / "task.toml")) and "not valid TOML" in message


def test_generator_with_a_wrong_dtype_is_named(tmp_path: Path) -> None:
    folder = _copy_of_vector_add(tmp_path)
    ref_file = folder / "reference.py"
    ref_file.write_text(
        ref_file.read_text().replace(
            '"a": rng.uniform(-100.0, 100.0, n).astype(np.float32)', '"a": rng.uniform(-100.0, 100.0, n)'
        )
    )
    task = load_task(folder)
    with pytest.raises(TaskFileError) as info:
        load_reference(task).inputs(task.validation[0], 1)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(ref_file)) and "generate()" in message and "'a'" in message


def test_reference_without_generate_is_named(tmp_path: Path) -> None:
    folder = _copy_of_vector_add(tmp_path)
    ref_file = folder / "reference.py"
    ref_file.write_text(ref_file.read_text().replace("def generate(", "def make_inputs("))
    with pytest.raises(TaskFileError) as info:
        load_reference(load_task(folder))
    assert str(info.value) == f"{ref_file}: generate(): missing"


# ---------------------------------------------------------------------------- baselines


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", LIBRARY)
def test_baseline_compiles(name: str, arch: str) -> None:
    # The baseline is the calling-convention example in every prompt: it must build wherever a
    # candidate is compiled (Hopper and Ampere), with nothing but NVRTC: no prelude, no policy.
    from cuda_llm.engine.compile import nvrtc_library
    from cuda_llm.engine.compile.result import CompilerUnavailableError

    try:
        raw = nvrtc_library.load()
    except CompilerUnavailableError as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    task = _task(name)
    _, prog = raw.nvrtcCreateProgram(task.baseline_source.encode(), b"baseline.cu", 0, [], [])
    try:
        options = [f"-arch={arch}".encode(), b"--std=c++17"]
        (result,) = raw.nvrtcCompileProgram(prog, len(options), options)
        assert result == raw.nvrtcResult.NVRTC_SUCCESS, f"{name}: the baseline does not compile for {arch}"
        _, size = raw.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        raw.nvrtcGetCUBIN(prog, cubin)
    finally:
        raw.nvrtcDestroyProgram(prog)
    # extern "C" kernels keep their names in the cubin's symbol table.
    for launch in task.baseline_plan.launches:
        assert launch.kernel.encode() in cubin, f"{name}: no kernel {launch.kernel!r} in the {arch} cubin"
