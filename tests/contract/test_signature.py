"""parse_kernels: extern "C" __global__ kernels and their parameters, read without a compiler."""

from __future__ import annotations

import pytest

from cuda_llm.engine.contract.signature import KernelParam, KernelScan, parse_kernels


def only(source: str) -> tuple[KernelParam, ...]:
    scan = parse_kernels(source)
    assert len(scan.kernels) == 1, scan
    return scan.kernels[0].params


def param(c_decl: str) -> KernelParam:
    (p,) = only(f'extern "C" __global__ void k({c_decl}) {{}}')
    return p


def test_simple_kernel() -> None:
    scan = parse_kernels(
        'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)\n'
        "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n}\n"
    )
    (k,) = scan.kernels
    assert k.name == "vector_add" and k.line == 1 and k.defined
    assert [p.name for p in k.params] == ["a", "b", "c", "n"]
    assert k.params[0] == KernelParam("a", "float", 1, True, "const float* a")
    assert k.params[2] == KernelParam("c", "float", 1, False, "float* c")
    assert k.params[3] == KernelParam("n", "int", 0, False, "int n")
    assert k.describe() == "vector_add(const float* a, const float* b, float* c, int n)"
    assert scan.get("vector_add") is k and scan.get("other") is None
    assert scan.names == ("vector_add",)


@pytest.mark.parametrize(
    ("decl", "c_type", "depth", "const"),
    [
        ("const float4* v", "float4", 1, True),
        ("float4 const * v", "float4", 1, True),
        ("float* const v", "float", 1, False),  # a const pointer, not a const pointee
        ("const float* const v", "float", 1, True),
        ("const float* __restrict__ v", "float", 1, True),
        ("float* __restrict v", "float", 1, False),
        ("float* restrict v", "float", 1, False),
        ("volatile int* v", "int", 1, False),
        ("const __half2* __restrict__ v", "__half2", 1, True),
        ("float v[]", "float", 1, False),
        ("const float v[256]", "float", 1, True),
        ("float** v", "float", 2, False),
        ("void* v", "void", 1, False),
        ("const unsigned char* v", "unsigned char", 1, True),
        ("unsigned v", "unsigned int", 0, False),
        ("int unsigned v", "unsigned int", 0, False),
        ("signed v", "int", 0, False),
        ("signed int v", "int", 0, False),
        ("long long int v", "long long", 0, False),
        ("unsigned long long v", "unsigned long long", 0, False),
        ("long unsigned long int v", "unsigned long long", 0, False),
        ("long v", "long", 0, False),
        ("short int v", "short", 0, False),
        ("size_t v", "size_t", 0, False),
        ("std::size_t v", "size_t", 0, False),
        ("::uint32_t v", "uint32_t", 0, False),
        ("cuda::std::int64_t v", "int64_t", 0, False),
        ("const int v", "int", 0, False),
        ("double v", "double", 0, False),
        ("int v = 4", "int", 0, False),
        ("__grid_constant__ const Params v", "Params", 0, False),
        ("REAL* v", "REAL", 1, False),  # a macro: kept as written, for binding to refuse
        ("struct Vec3* v", "struct Vec3", 1, False),
        ("my::ns::Vec3 v", "my::ns::Vec3", 0, False),
        ("[[maybe_unused]] int v", "int", 0, False),
        ("__attribute__((unused)) int v", "int", 0, False),
    ],
)
def test_parameter_types(decl: str, c_type: str, depth: int, const: bool) -> None:
    p = param(decl)
    assert (p.name, p.c_type, p.pointer_depth, p.is_const_pointee) == ("v", c_type, depth, const)


def test_raw_is_the_parameter_as_written_without_comments() -> None:
    p = param("const float * /* input */ __restrict__ x")
    assert p.raw == "const float* __restrict__ x"


@pytest.mark.parametrize(
    ("decl", "c_type", "name"),
    [
        ("float& r", "float&", "r"),
        ("const float &r", "const float&", "r"),
        ("void (*f)(int)", "void(* f)(int)", ""),
        ("Array<float, 4> a", "Array<float, 4>", "a"),
    ],
)
def test_unusual_parameters_are_kept_as_written(decl: str, c_type: str, name: str) -> None:
    p = param(decl)
    assert (p.c_type, p.name, p.pointer_depth) == (c_type, name, 0)


def test_template_argument_commas_do_not_split_parameters() -> None:
    params = only('extern "C" __global__ void k(Pair<int, float> p, int n) {}')
    assert [p.name for p in params] == ["p", "n"]


def test_unnamed_parameters_in_a_prototype() -> None:
    scan = parse_kernels('extern "C" __global__ void k(const float*, unsigned int, size_t);')
    (k,) = scan.kernels
    assert not k.defined
    assert [(p.name, p.c_type, p.pointer_depth) for p in k.params] == [
        ("", "float", 1),
        ("", "unsigned int", 0),
        ("", "size_t", 0),
    ]


def test_prototype_then_definition_keeps_the_definition() -> None:
    scan = parse_kernels(
        'extern "C" __global__ void k(float*, int);\n\n'
        'extern "C" __global__ void k(float* x, int n)\n{\n    x[0] = n;\n}\n'
    )
    (k,) = scan.kernels
    assert k.defined and k.line == 3
    assert [p.name for p in k.params] == ["x", "n"]


def test_no_parameters() -> None:
    assert only('extern "C" __global__ void k() {}') == ()
    assert only('extern "C" __global__ void k(void) {}') == ()


def test_multi_line_signature_with_attributes() -> None:
    source = (
        "// header\n"
        'extern "C"\n'
        "__global__\n"
        "void\n"
        "__launch_bounds__(256, 2)\n"
        "tiled(\n"
        "    const float* __restrict__ a,   // rows x k\n"
        "    float* __restrict__ c,\n"
        "    int rows)\n"
        "{\n}\n"
    )
    (k,) = parse_kernels(source).kernels
    assert k.name == "tiled" and k.line == 6
    assert [p.raw for p in k.params] == ["const float* __restrict__ a", "float* __restrict__ c", "int rows"]


@pytest.mark.parametrize(
    "prefix",
    [
        'extern "C" __global__ __launch_bounds__(1024) void',
        'extern "C" __global__ void __launch_bounds__(128, 4)',
        'extern "C" __launch_bounds__(128) __global__ void',
        'extern "C" __global__ void __maxnreg__(32)',
        'extern "C" __global__ void __cluster_dims__(2, 1, 1)',
        'extern "C" __global__ __cluster_dims__(2, 1, 1) void',
        'extern "C" __global__ void __launch_bounds__((256 > 128) ? 256 : 128)',
        'extern "C" __attribute__((visibility("default"))) __global__ void',
    ],
)
def test_launch_attributes(prefix: str) -> None:
    (k,) = parse_kernels(f"{prefix} k(float* x) {{ x[0] = 1; }}").kernels
    assert k.name == "k" and k.params[0].name == "x"


def test_extern_c_block() -> None:
    source = """
extern "C" {

__device__ float sq(float v) { return v * v; }

__global__ void first(float* x) { if (x) { x[0] = sq(2.0f); } }

__global__ void second(const double* y, long long n);

__global__ void second(const double* y, long long n)
{
    char open = '{';  // a brace in a literal must not unbalance the block
    const char* s = "}}}";
}

extern "C++" __global__ void mangled_inside(int n) {}

}  // extern "C"

__global__ void after_block(int n) {}
"""
    scan = parse_kernels(source)
    assert scan.names == ("first", "second")
    assert scan.get("second").params[1].c_type == "long long"  # type: ignore[union-attr]
    assert scan.not_extern_c == ("mangled_inside", "after_block")


def test_kernels_without_extern_c_are_listed_separately() -> None:
    source = '__global__ void plain(float* x) {}\nextern "C" __global__ void ok(float* x) {}\n'
    scan = parse_kernels(source)
    assert scan.names == ("ok",)
    assert scan.not_extern_c == ("plain",)


def test_templates_are_listed_separately() -> None:
    source = (
        'extern "C" template <int BLOCK, typename T>\n__global__ void tiled(T* x) {}\n'
        "template <typename T> __global__ void plain_template(T* x, int n) {}\n"
        'extern "C" { template <int N> __global__ void in_block(float* x) {} }\n'
    )
    scan = parse_kernels(source)
    assert scan.kernels == ()
    assert scan.templates == ("tiled", "plain_template", "in_block")


def test_comments_strings_and_literals_hide_nothing_real() -> None:
    source = r"""
// extern "C" __global__ void in_line_comment(int x) {}
/* extern "C" __global__ void in_block_comment(int x) {}
   still a comment */
const char* s = "extern \"C\" __global__ void in_string(int x) {}";
const char* r = R"cuda(extern "C" __global__ void in_raw_string(int x) {})cuda";
const char q = '"';
extern "C" __global__ void real(int x) {}
"""
    scan = parse_kernels(source)
    assert scan.names == ("real",)
    assert scan.get("real").line == 8  # type: ignore[union-attr]


def test_line_splices_join_lines_and_keep_line_numbers() -> None:
    source = (
        'extern "C" __global__ void \\\n'
        "spliced(float* x, \\\n"
        "        int n) {}\n"
        "\n"
        'extern "C" __global__ void next(int n) {}\n'
    )
    scan = parse_kernels(source)
    assert [(k.name, k.line) for k in scan.kernels] == [("spliced", 2), ("next", 5)]
    assert [p.name for p in scan.kernels[0].params] == ["x", "n"]


def test_splice_inside_an_identifier() -> None:
    (k,) = parse_kernels('extern "C" __global__ void ker\\\nnel(int n) {}').kernels
    assert k.name == "kernel"


def test_windows_line_endings() -> None:
    source = 'extern "C" __global__ void a(int n) {}\r\n\r\nextern "C" __global__ void b(int n) {}\r\n'
    assert [(k.name, k.line) for k in parse_kernels(source).kernels] == [("a", 1), ("b", 3)]


def test_if_zero_regions_are_skipped() -> None:
    source = """
#if 0
extern "C" __global__ void k(float* old, int n) {}
#if defined(X)
#endif
#else
extern "C" __global__ void k(float* x, float* y, int n) {}
#endif
#if 0 // disabled
extern "C" __global__ void dead(int n) {}
#endif
"""
    scan = parse_kernels(source)
    assert scan.names == ("k",)
    assert [p.name for p in scan.kernels[0].params] == ["x", "y", "n"]


def test_macros_that_declare_kernels_are_reported() -> None:
    source = (
        '#define KERNEL extern "C" __global__\n'
        "#define N 256\n"
        "KERNEL void k(float* x) {}\n"
        '#define LONG_MACRO extern "C" \\\n    __global__ void\n'
    )
    scan = parse_kernels(source)
    assert scan.kernels == ()
    assert scan.macros == ("KERNEL", "LONG_MACRO")


def test_directive_after_a_comment_is_still_a_directive() -> None:
    scan = parse_kernels('/* note */ #define K extern "C" __global__\nextern "C" __global__ void k() {}\n')
    assert scan.macros == ("K",)
    assert scan.names == ("k",)


def test_empty_and_garbage_sources() -> None:
    assert parse_kernels("") == KernelScan(())
    assert parse_kernels("__global__") == KernelScan(())
    assert parse_kernels('extern "C" __global__ void k(float* x').names == ("k",)
    assert parse_kernels("/* never closed").kernels == ()
    assert parse_kernels('const char* s = "never closed\nextern "C" __global__ void k() {}').names == ("k",)


def test_many_kernels_keep_their_lines() -> None:
    body = "".join(
        f'extern "C" __global__ void k{i}(const float* x, float* y, int n) {{ y[0] = x[0] + n; }}\n'
        for i in range(2000)
    )
    scan = parse_kernels(body)
    assert len(scan.kernels) == 2000
    assert scan.kernels[-1].line == 2000
