"""bind_plan: a launch plan checked against a task and the kernels' signatures."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_llm.engine.contract.binding import MAX_PROBLEMS, bind_plan
from cuda_llm.engine.contract.signature import parse_kernels
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.task import TaskLibrary, load_task
from cuda_llm.engine.task.model import Task
from cuda_llm.engine.task.plan import BoundArg, BoundPlan, parse_plan

from .conftest import TaskFactory, build_task

VECTOR_ADD = 'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {}'


def launch(kernel: str, args: list[Any], grid: Any = None, block: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "kernel": kernel,
        "grid": grid if grid is not None else ["cdiv(n, 256)"],
        "block": block if block is not None else [256],
        "args": args,
        **extra,
    }


def bind(
    source: str,
    launches: list[dict[str, Any]],
    task: Task | None = None,
    scratch: list[dict[str, Any]] | None = None,
    ptx: dict[str, tuple[int, ...]] | None = None,
) -> BoundPlan:
    plan = parse_plan({"scratch": scratch or [], "launches": launches})
    return bind_plan(plan, task or build_task(), parse_kernels(source), ptx)


def bind_error(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(FormatError) as info:
        bind(*args, **kwargs)
    return str(info.value)


def vadd(args: list[Any], **kwargs: Any) -> dict[str, Any]:
    return launch("vector_add", args, **kwargs)


# --- good plans -------------------------------------------------------------------------------


def test_vector_add_binds() -> None:
    bound = bind(VECTOR_ADD, [vadd(["a", "b", "c", "n"])])
    (la,) = bound.launches
    assert la.kernel == "vector_add"
    assert la.grid == ("cdiv(n, 256)", "1", "1")
    assert la.block == ("256", "1", "1")
    assert la.shared_bytes == "0"
    assert la.args == (
        BoundArg("buffer", "a", "ptr"),
        BoundArg("buffer", "b", "ptr"),
        BoundArg("buffer", "c", "ptr"),
        BoundArg("scalar", "n", "int32"),
    )


REDUCTION = """
extern "C" __global__ void block_sums(const float* __restrict__ x, float* partial, int n) {}
extern "C" __global__ void final_sum(const float* partial, float* out, int count) {}
"""


def reduction_task() -> Task:
    return build_task(
        buffers={"x": ("float32", ("n",), "input"), "out": ("float32", ("1",), "output")},
    )


def test_two_launch_reduction_with_scratch() -> None:
    bound = bind(
        REDUCTION,
        [
            launch("block_sums", ["x", "partial", "n"], grid=["cdiv(n, 1024)"], shared_bytes="256 * 4"),
            launch("final_sum", ["partial", "out", "cdiv(n, 1024)"], grid=[1], block=[1024]),
        ],
        task=reduction_task(),
        scratch=[{"name": "partial", "dtype": "float32", "count": "cdiv(n, 1024)"}],
    )
    assert bound.scratch[0].name == "partial"
    first, second = bound.launches
    assert first.shared_bytes == "256 * 4"
    assert first.args[1] == BoundArg("scratch", "partial", "ptr")
    # The second launch reads, through a const pointer, the scratch the first one wrote.
    assert second.args == (
        BoundArg("scratch", "partial", "ptr"),
        BoundArg("buffer", "out", "ptr"),
        BoundArg("expr", "cdiv(n, 1024)", "int32"),
    )
    assert second.grid == ("1", "1", "1") and second.block == ("1024", "1", "1")


def test_vector_types_and_byte_views() -> None:
    task = build_task(
        buffers={
            "x": ("float32", ("n",), "input"),
            "h": ("float16", ("n",), "input"),
            "i": ("int32", ("n",), "input"),
            "y": ("float32", ("n",), "output"),
        }
    )
    source = (
        'extern "C" __global__ void k(const float4* __restrict__ x, const __half2* h, const int4* i,'
        " float4* y, int n) {}\n"
        'extern "C" __global__ void bytes(const void* x, const unsigned char* h, const char* i, void* y) {}\n'
    )
    bound = bind(source, [launch("k", ["x", "h", "i", "y", "n"]), launch("bytes", ["x", "h", "i", "y"])], task)
    assert all(a.param_type == "ptr" for la in bound.launches for a in la.args if a.kind == "buffer")


@pytest.mark.parametrize(
    ("c_type", "param_type"),
    [("long long", "int64"), ("int64_t", "int64"), ("size_t", "uint64"), ("unsigned long long", "uint64")],
)
def test_int64_expression_arguments(c_type: str, param_type: str) -> None:
    source = f'extern "C" __global__ void k(float* c, {c_type} n, {c_type} total) {{}}'
    bound = bind(source, [launch("k", ["c", {"expr": "n", "type": "int64"}, {"expr": "n * 4", "type": "int64"}])])
    assert bound.launches[0].args[1:] == (
        BoundArg("expr", "n", param_type),
        BoundArg("expr", "n * 4", param_type),
    )


def test_scalars_of_every_width_by_name() -> None:
    task = build_task(
        scalars={
            "n": ("int32", None),
            "big": ("int64", None),
            "bins": ("uint32", 256),
            "alpha": ("float32", 0.5),
            "beta": ("float64", 2.0),
        },
        buffers={"x": ("float32", ("n",), "input"), "y": ("float32", ("n",), "output")},
    )
    source = 'extern "C" __global__ void k(float* y, int n, long long big, unsigned bins, float alpha, double beta) {}'
    bound = bind(source, [launch("k", ["y", "n", "big", "bins", "alpha", "beta"])], task)
    assert [(a.kind, a.param_type) for a in bound.launches[0].args] == [
        ("buffer", "ptr"),
        ("scalar", "int32"),
        ("scalar", "int64"),
        ("scalar", "uint32"),
        ("scalar", "float32"),
        ("scalar", "float64"),
    ]


def test_signedness_may_differ_when_the_width_matches() -> None:
    source = 'extern "C" __global__ void k(float* c, unsigned int n, uint32_t m, int zero) {}'
    bound = bind(source, [launch("k", ["c", "n", "n - 1", 0])])
    assert [a.param_type for a in bound.launches[0].args] == ["ptr", "uint32", "uint32", "int32"]
    assert bound.launches[0].args[3] == BoundArg("expr", "0", "int32")


def test_input_through_a_non_const_pointer_is_allowed() -> None:
    # Writing an input is caught by hashing inputs at validation; declaring it non-const is not
    # a format error (many people write plain float*).
    source = 'extern "C" __global__ void vector_add(float* a, float* b, float* c, int n) {}'
    (la,) = bind(source, [vadd(["a", "b", "c", "n"])]).launches
    assert [(a.kind, a.ref, a.param_type) for a in la.args[:3]] == [("buffer", x, "ptr") for x in "abc"]


def test_three_dimensional_launch() -> None:
    task = build_task(
        scalars={"rows": ("int32", None), "cols": ("int32", None), "depth": ("int32", 4)},
        buffers={"a": ("float32", ("rows", "cols"), "input"), "b": ("float32", ("rows", "cols"), "output")},
    )
    source = 'extern "C" __global__ void k(const float* a, float* b, int rows, int cols) {}'
    bound = bind(
        source,
        [
            launch(
                "k",
                ["a", "b", "rows", "cols"],
                grid=["cdiv(cols, 16)", "cdiv(rows, 16)", "depth"],
                block=[16, 16],
            )
        ],
        task,
    )
    assert bound.launches[0].grid == ("cdiv(cols, 16)", "cdiv(rows, 16)", "depth")
    assert bound.launches[0].block == ("16", "16", "1")


def test_matching_ptx_parameters_bind() -> None:
    bound = bind(VECTOR_ADD, [vadd(["a", "b", "c", "n"])], ptx={"vector_add": (8, 8, 8, 4), "unused": ()})
    assert [a.param_type for a in bound.launches[0].args] == ["ptr", "ptr", "ptr", "int32"]


# --- kernels ----------------------------------------------------------------------------------


def test_unknown_kernel_lists_the_defined_ones() -> None:
    source = VECTOR_ADD + '\nextern "C" __global__ void vector_sub(const float* a, float* c, int n) {}'
    message = bind_error(source, [launch("vectoradd", ["a", "b", "c", "n"])])
    assert 'launches[0] (kernel "vectoradd"): unknown kernel "vectoradd" (did you mean "vector_add"?)' in message
    assert 'the extern "C" __global__ kernels in the code are: vector_add, vector_sub' in message


def test_unknown_kernel_mentions_those_that_cannot_be_launched() -> None:
    source = (
        VECTOR_ADD + "\n__global__ void helper(float* x) {}\n"
        "template <int N> __global__ void tmpl(float* x) {}\n"
        '#define KERNEL extern "C" __global__\n'
    )
    message = bind_error(source, [launch("other", ["a"])])
    assert 'Not extern "C" (their names are mangled, so they cannot be launched): helper.' in message
    assert 'Templates (cannot be extern "C"): tmpl.' in message
    assert "__global__ appears inside #define KERNEL" in message
    assert 'write extern "C" __global__ void name(...) out in full' in message


def test_no_kernel_at_all() -> None:
    message = bind_error("__device__ float f(float x) { return x; }", [launch("k", [])])
    assert 'unknown kernel "k": the code defines no extern "C" __global__ kernel.' in message


def test_kernel_not_extern_c() -> None:
    message = bind_error("__global__ void k(float* c, int n) {}", [launch("k", ["c", "n"])])
    assert 'kernel "k" is not declared extern "C" (C++ name mangling hides it)' in message
    assert 'write extern "C" __global__ void k(...)' in message


def test_template_kernel() -> None:
    message = bind_error("template <int B> __global__ void k(float* c, int n) {}", [launch("k", ["c", "n"])])
    assert 'kernel "k" is a template, and a template cannot be extern "C"' in message


def test_kernel_declared_but_not_defined() -> None:
    message = bind_error('extern "C" __global__ void k(float* c, int n);', [launch("k", ["c", "n"])])
    assert 'kernel "k" is declared on line 1 but never defined: give it a body.' in message


# --- argument counts and names ----------------------------------------------------------------


@pytest.mark.parametrize("args", [["a", "b", "c"], ["a", "b", "c", "n", "n"], []])
def test_argument_count_shows_the_signature(args: list[str]) -> None:
    message = bind_error(VECTOR_ADD, [vadd(args)])
    assert f"{len(args)} argument(s) for 4 parameter(s)" in message
    assert "the signature is vector_add(const float* a, const float* b, float* c, int n)" in message


def test_unknown_argument_name() -> None:
    message = bind_error(VECTOR_ADD, [vadd(["a", "bb", "c", "n"])])
    assert 'launches[0].args[1] "bb": unknown name "bb" (did you mean "b"?)' in message
    assert "a task buffer (a, b, c), a scratch buffer (none declared), a task scalar (n)" in message
    assert "an integer expression of n" in message


# --- buffers ----------------------------------------------------------------------------------


def test_buffer_to_a_scalar_parameter() -> None:
    source = 'extern "C" __global__ void vector_add(float a, const float* b, float* c, int n) {}'
    message = bind_error(source, [vadd(["a", "b", "c", "n"])])
    assert 'the input buffer "a" (float32) goes to the parameter `float a`, which is not a pointer' in message
    assert "declare it `const float* a`" in message


def test_buffer_to_a_pointer_of_the_wrong_type() -> None:
    source = 'extern "C" __global__ void vector_add(const int* a, const float* b, float* c, int n) {}'
    message = bind_error(source, [vadd(["a", "b", "c", "n"])])
    assert 'the input buffer "a" (float32) goes to the parameter `const int* a`, which points to int' in message
    assert "declare it `const float* a`" in message
    assert "float2, float4" in message


def test_double_buffer_to_float_pointer() -> None:
    task = build_task(buffers={"x": ("float64", ("n",), "input"), "y": ("float64", ("n",), "output")})
    source = 'extern "C" __global__ void k(const double* x, float* y, int n) {}'
    message = bind_error(source, [launch("k", ["x", "y", "n"])], task)
    assert 'the output buffer "y" (float64) goes to the parameter `float* y`, which points to float' in message
    assert "declare it `double* y`" in message


def test_pointer_to_pointer() -> None:
    source = 'extern "C" __global__ void vector_add(const float** a, const float* b, float* c, int n) {}'
    message = bind_error(source, [vadd(["a", "b", "c", "n"])])
    assert "the parameter `const float** a` is a pointer to a pointer" in message


def test_output_to_const_pointer() -> None:
    source = 'extern "C" __global__ void vector_add(const float* a, const float* b, const float* c, int n) {}'
    message = bind_error(source, [vadd(["a", "b", "c", "n"])])
    assert 'the output buffer "c" goes to the parameter `const float* c`' in message
    assert "nothing could write it: drop the const" in message


def test_scratch_first_read_through_const_pointer() -> None:
    message = bind_error(
        REDUCTION.replace("float* partial, int n", "const float* partial, int n"),
        [
            launch("block_sums", ["x", "partial", "n"]),
            launch("final_sum", ["partial", "out", "cdiv(n, 1024)"]),
        ],
        task=reduction_task(),
        scratch=[{"name": "partial", "dtype": "float32", "count": "cdiv(n, 1024)"}],
    )
    assert 'launches[0] (kernel "block_sums"): the scratch buffer "partial" goes to the parameter' in message
    assert "drop the const" in message
    assert "launches[1]" not in message  # once launch 0 is fixed, launch 1's const read is fine


def test_output_never_passed() -> None:
    source = 'extern "C" __global__ void k(const float* a, const float* b, int n) {}'
    message = bind_error(source, [launch("k", ["a", "b", "n"])])
    assert message == (
        'launch plan: the output buffer "c" is not passed to any launch: give it to a kernel '
        "through a non-const pointer (float* c) that writes it."
    )


def test_output_check_waits_for_launches_that_bind() -> None:
    # The unknown kernel is the problem; that its arguments never reached "c" follows from it.
    message = bind_error(VECTOR_ADD, [launch("vector_ad", ["a", "b", "c", "n"])])
    assert "not passed to any launch" not in message


# --- scalars and expressions ------------------------------------------------------------------


def leaky_task() -> Task:
    return build_task(
        scalars={"n": ("int32", None), "alpha": ("float32", 0.01), "big": ("int64", None)},
        buffers={"x": ("float32", ("n",), "input"), "y": ("float32", ("n",), "output")},
    )


@pytest.mark.parametrize(
    ("param", "arg", "expected"),
    [
        (
            "int alpha",
            "alpha",
            'the scalar "alpha" (float32) goes to the parameter `int alpha`, an integer: declare it `float alpha`',
        ),
        (
            "double alpha",
            "alpha",
            'the scalar "alpha" (float32) is 4 bytes but the parameter `double alpha` is 8: declare it `float alpha`',
        ),
        (
            "float n",
            "n",
            'the scalar "n" (int32) is an integer but the parameter `float n` is floating-point: declare it `int n`',
        ),
        (
            "size_t n",
            "n",
            'the scalar "n" (int32) passes as 4 bytes but the parameter `size_t n` takes 8: '
            'write {"expr": "n", "type": "int64"}',
        ),
        (
            "int big",
            "big",
            'the scalar "big" (int64) is 8 bytes but the parameter `int big` takes 4: declare it `long long big`',
        ),
        (
            "float* n",
            "n",
            'the scalar "n" (int32) goes to the parameter `float* n`, a pointer; pointers receive task buffers (x, y)',
        ),
        (
            "int n",
            {"expr": "n", "type": "int64"},
            'passes as 8 bytes but the parameter `int n` takes 4: drop "type": "int64"',
        ),
        (
            "size_t m",
            "n * 2",
            'the integer expression "n * 2" (int32) passes as 4 bytes but the parameter '
            '`size_t m` takes 8: write {"expr": "n * 2", "type": "int64"}',
        ),
        (
            "float m",
            "n * 2",
            'the integer expression "n * 2" (int32) goes to the parameter `float m`, which is floating-point',
        ),
        ("float* m", "n * 2", "goes to the parameter `float* m`, a pointer"),
        ("int m", "x + 1", '"x + 1": "x" is a buffer.'),
        ("int m", "alpha * 2", '"alpha" is a floating-point scalar.'),
        ("int m", "cdiv(n, m)", '"m" is not a name of this task'),
        (
            "int m",
            {"expr": "x", "type": "int64"},
            '"x" is a buffer, and only integer expressions take a "type"',
        ),
        ("int m", 3_000_000_000, "3000000000 does not fit the parameter `int m` (int32)"),
        ("unsigned m", -1, "-1 does not fit the parameter `unsigned m` (uint32)"),
        ("int m", "1 // 0", "division by zero"),
    ],
)
def test_scalar_and_expression_mismatches(param: str, arg: Any, expected: str) -> None:
    source = f'extern "C" __global__ void k(float* y, {param}) {{}}'
    message = bind_error(source, [launch("k", ["y", arg])], leaky_task())
    assert f'launches[0].args[1] "{arg if isinstance(arg, str | int) else arg["expr"]}"' in message
    assert expected in message


def test_expression_error_lists_the_integer_names() -> None:
    message = bind_error(
        'extern "C" __global__ void k(float* y, int m) {}', [launch("k", ["y", "n + q"])], leaky_task()
    )
    assert "the task's integer scalars: big, n." in message


# --- parameter types the harness cannot pass --------------------------------------------------


@pytest.mark.parametrize(
    ("param", "arg", "expected"),
    [
        ("REAL* x", "x", 'the parameter `REAL* x` points to "REAL", which the harness cannot check'),
        ("Params p", "n", 'the parameter `Params p` has type "Params", which the harness cannot pass'),
        ("__grid_constant__ const Params p", "n", "spell parameter types out with built-in types"),
        ("float& r", "alpha", "the parameter `float& r` is a reference"),
        ("short s", "n", "the parameter `short s` has type short, which the harness does not pass"),
        ("bool flag", "n", "integers pass as int or unsigned int (4 bytes) or long long, int64_t or size_t"),
        ("struct V* v", "x", 'points to "struct V"'),
    ],
)
def test_types_the_harness_cannot_pass(param: str, arg: str, expected: str) -> None:
    source = f'extern "C" __global__ void k(float* y, {param}) {{}}'
    assert expected in bind_error(source, [launch("k", ["y", arg])], leaky_task())


# --- scratch, grid, block, shared memory ------------------------------------------------------


@pytest.mark.parametrize(
    ("scratch", "expected"),
    [
        ({"name": "c", "dtype": "float32", "count": "n"}, 'the task already has a buffer named "c"'),
        ({"name": "n", "dtype": "float32", "count": "n"}, 'the task already has a scalar named "n"'),
        (
            {"name": "tmp", "dtype": "float32", "count": "cdiv(m, 2)"},
            'scratch[0] "tmp": count "cdiv(m, 2)": "m" is not',
        ),
        ({"name": "tmp", "dtype": "float32", "count": "a"}, '"a" is a buffer'),
        (
            {"name": "tmp", "dtype": "float32", "count": 0},
            'scratch[0] "tmp": count is 0: it must be at least 1',
        ),
        ({"name": "tmp", "dtype": "float32", "count": "4 - 8"}, "count is -4: it must be at least 1"),
    ],
)
def test_scratch_errors(scratch: dict[str, Any], expected: str) -> None:
    assert expected in bind_error(VECTOR_ADD, [vadd(["a", "b", "c", "n"])], scratch=[scratch])


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"grid": [0]}, "launches[0].grid[0] is 0: it must be at least 1"),
        ({"grid": ["256 - 256"]}, "launches[0].grid[0] is 0: it must be at least 1"),
        ({"grid": [1, -2]}, "launches[0].grid[1] is -2: it must be at least 1"),
        ({"block": [256, 0]}, "launches[0].block[1] is 0: it must be at least 1"),
        (
            {"grid": ["cdiv(size, 256)"]},
            'launches[0].grid[0] "cdiv(size, 256)": "size" is not a name of this task',
        ),
        ({"block": ["a"]}, '"a" is a buffer'),
        ({"shared_bytes": -1}, "launches[0].shared_bytes is -1: it must be at least 0"),
        ({"shared_bytes": "smem"}, '"smem" is not a name of this task'),
        ({"grid": ["1 // 0"]}, "division by zero"),
    ],
)
def test_grid_block_and_shared_memory(fields: dict[str, Any], expected: str) -> None:
    la = vadd(["a", "b", "c", "n"])
    la.update(fields)
    assert expected in bind_error(VECTOR_ADD, [la])


def test_zero_shared_bytes_and_unit_dimensions_are_fine() -> None:
    bound = bind(VECTOR_ADD, [vadd(["a", "b", "c", "n"], grid=[1, 1, 1], block=[1], shared_bytes=0)])
    assert bound.launches[0].grid == ("1", "1", "1")


# --- PTX cross-check --------------------------------------------------------------------------


def test_ptx_without_the_kernel() -> None:
    message = bind_error(VECTOR_ADD, [vadd(["a", "b", "c", "n"])], ptx={"other": (8,)})
    assert 'kernel "vector_add" is not in the compiled code (compiled kernels: other)' in message


def test_ptx_parameter_count_differs() -> None:
    message = bind_error(VECTOR_ADD, [vadd(["a", "b", "c", "n"])], ptx={"vector_add": (8, 8, 8, 4, 4)})
    assert 'the compiled kernel "vector_add" takes 5 parameters, but its source reads as' in message
    assert "write the signature out without macros" in message


def test_ptx_parameter_size_differs() -> None:
    # What `#define int long long` would do: the source reads int, the compiled code takes 8 bytes.
    message = bind_error(VECTOR_ADD, [vadd(["a", "b", "c", "n"])], ptx={"vector_add": (8, 8, 8, 8)})
    assert "the parameter `int n` is 8 bytes in the compiled code but 4 as written" in message


# --- reporting --------------------------------------------------------------------------------


def test_several_problems_are_reported_together() -> None:
    source = 'extern "C" __global__ void vector_add(const float* a, const int* b, const float* c, int n) {}'
    message = bind_error(source, [vadd(["a", "b", "c", "nn"], grid=[0])])
    first, rest = message.split("\n", 1)
    assert first.startswith("launch plan: launches[0].grid[0] is 0")
    assert rest.startswith("3 more problem(s) in this plan:\n- ")
    assert "grid[0] is 0" in message
    assert 'args[1] "b"' in message
    assert 'args[3] "nn": unknown name' in message
    assert 'the output buffer "c"' in message


def test_problem_list_is_capped() -> None:
    params = ", ".join(f"int p{i}" for i in range(MAX_PROBLEMS + 3))
    source = f'extern "C" __global__ void k({params}) {{}}'
    message = bind_error(source, [launch("k", [f"q{i}" for i in range(MAX_PROBLEMS + 3)])])
    assert f"{MAX_PROBLEMS + 2} more problem(s) in this plan:" in message
    assert message.count("\n- ") == MAX_PROBLEMS - 1
    assert message.endswith("(and 3 more)")


def test_a_single_problem_is_one_line() -> None:
    message = bind_error(VECTOR_ADD, [vadd(["a", "b", "c", "m"])])
    assert message.startswith('launch plan: launches[0].args[3] "m": unknown name "m"')
    assert "\n" not in message


# --- the task library -------------------------------------------------------------------------

_LIBRARY = TaskLibrary().folders()


def test_library_is_not_empty() -> None:
    assert "vector_add" in _LIBRARY


@pytest.mark.parametrize("name", sorted(_LIBRARY))
def test_every_library_baseline_binds_to_its_own_source(name: str) -> None:
    task = load_task(_LIBRARY[name])
    kernels = parse_kernels(task.baseline_source)
    bound = bind_plan(task.baseline_plan, task, kernels)
    assert [la.kernel for la in bound.launches] == [la.kernel for la in task.baseline_plan.launches]
    for la in bound.launches:
        sig = kernels.get(la.kernel)
        assert sig is not None and len(la.args) == len(sig.params)


def test_library_loader_yields_the_same_tasks() -> None:
    loaded = {t.name for t in TaskLibrary().load_all() if isinstance(t, Task)}
    assert loaded <= set(_LIBRARY)


def test_make_task_fixture(make_task: TaskFactory) -> None:
    task = make_task(buffers={"x": ("float32", ("n",), "input"), "y": ("float32", ("n",), "output")})
    source = 'extern "C" __global__ void k(const float* x, float* y, int n) {}'
    assert bind(source, [launch("k", ["x", "y", "n"])], task).launches[0].args[2].kind == "scalar"
