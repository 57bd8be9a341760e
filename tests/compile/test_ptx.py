"""Reading PTX: parameter sizes, reduced precision, device globals (on PTX recorded from NVRTC 13.5;
the compile tests check live PTX)."""

from __future__ import annotations

from cuda_llm.engine.compile.ptx import device_globals, precision_hints, ptx_entries

# NVRTC 13.5's PTX for a kernel that counts its launches in a __device__ global, reads a
# __device__ const table and calls printf; and one that takes a struct by value.
PTX = """\
.version 9.5
.target sm_90
.address_size 64

	// .globl	k
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 4 .u32 counter;
.global .align 4 .b8 lut[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};
.global .align 4 .u32 unused_constant = 7;
.global .align 1 .b8 $str[7] = {104, 105, 32, 37, 100, 10};

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1,
	.param .f64 k_param_2,
	.param .u8 k_param_3,
	.param .u16 k_param_4
)
{
	.reg .b32 	%r<14>;
	.reg .b64 	%rd<13>;
	.shared .align 4 .b8 _ZZ1kE4tile[4096];

	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u64 	%rd9, lut;
	add.s64 	%rd10, %rd9, %rd8;
	ld.global.nc.f32 	%f3, [%rd10];
	st.global.f32 	[%rd6], %f4;
	ld.global.u32 	%r11, [counter];
	add.s32 	%r12, %r11, 1;
	st.global.u32 	[counter], %r12;
	mov.u64 	%rd11, $str;
	cvta.global.u64 	%rd12, %rd11;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd12;
	call.uni (retval0),
	vprintf,
	(
	param0
	);
	} // callseq 0
	ret;

}
	// .globl	k2
.visible .entry k2(
	.param .align 4 .b8 k2_param_0[20],
	.param .u64 k2_param_1
)
{
	ret;
}
.visible .entry none()
{
	ret;
}
"""

# The same layout, with the address of a global going through registers before an atomic.
ATOMIC_PTX = """\
.global .align 4 .b8 cache[256];
.global .align 4 .u32 hits;
.visible .entry remember(
	.param .u64 remember_param_0
)
{
	mov.u64 	%rd1, cache;
	cvta.global.u64 	%rd2, %rd1;
	add.s64 	%rd3, %rd2, 16;
	mov.u64 	%rd4, hits;
	atom.global.add.u32 	%r1, [%rd4], 1;
	@%p1 st.f32 	[%rd3], %f1;
	ret;
}
.visible .entry reads(
	.param .u64 reads_param_0
)
{
	mov.u64 	%rd1, cache;
	ld.global.f32 	%f1, [%rd1+12];
	ret;
}
"""


def test_parameter_sizes_per_entry() -> None:
    assert ptx_entries(PTX) == {"k": (8, 4, 8, 1, 2), "k2": (20, 8), "none": ()}


def test_device_globals_and_who_writes_them() -> None:
    found, per_kernel = device_globals(PTX)
    assert [(g.name, g.size_bytes, g.written) for g in found] == [
        ("counter", 4, True),
        ("lut", 16, False),
    ]  # printf's $str and the unreferenced constant are not listed
    assert per_kernel == {"k": ("counter",)}


def test_writes_through_registers_and_atomics() -> None:
    found, per_kernel = device_globals(ATOMIC_PTX)
    assert {g.name: g.written for g in found} == {"cache": True, "hits": True}
    assert per_kernel == {"remember": ("cache", "hits")}


def test_no_globals() -> None:
    assert device_globals(".visible .entry k()\n{\n\tret;\n}\n") == ((), {})


def test_precision_hints_name_each_kind_once() -> None:
    ptx = """\
	{ cvt.rn.f16x2.f32 %r1, %f2, %f1; }
	{fma.rn.f16x2 %r2,%r1,%r1,%r1;
	{add.f16 %rs1,%rs2,%rs3;
	{.reg .f16 low,high;
	cvt.f32.f16 %f3, low;}
	{  cvt.rn.bf16.f32 %rs4, %f4;}
	cvt.rna.tf32.f32 %r7, %f6;
	wmma.load.a.sync.aligned.row.m16n16k16.global.f16 	{%r2, %r3}, [%rd6], %r1;
	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1}, {%r1}, {%r2}, {%f1};
	@%p1 add.rn.bf16x2 %r1, %r2, %r3;
	cvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f2;
"""
    assert precision_hints(ptx) == (
        "fp16 conversion: cvt.rn.f16x2.f32",
        "fp16 arithmetic: fma.rn.f16x2",
        "bf16 conversion: cvt.rn.bf16.f32",
        "tf32 conversion: cvt.rna.tf32.f32",
        "fp16 tensor-core mma: wmma.load.a.sync.aligned.row.m16n16k16.global.f16",
        "tf32 tensor-core mma: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "bf16 arithmetic: add.rn.bf16x2",
        "fp8 conversion: cvt.rn.satfinite.e4m3x2.f32",
    )


def test_fp32_code_has_no_precision_hints() -> None:
    ptx = """\
	add.f32 %f1, %f2, %f3; // add.f16 in a comment is no instruction
	fma.rn.f32 %f1, %f2, %f3, %f4;
	ld.global.b16 %rs1, [%rd1];
	cvt.rn.f32.s32 %f1, %r1;
	ex2.approx.ftz.f32 %f1, %f2;
	mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1}, {%fd2}, {%fd3}, {%fd4};
"""
    assert precision_hints(ptx) == ()
