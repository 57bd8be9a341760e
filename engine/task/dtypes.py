"""The element and scalar types a task can declare: the one table of dtypes.

Every layer reads a dtype's facts from here (tests/test_layers.py fails on a second list): its
spelling in task files and launch plans, how the host carries it (a NumPy dtype), its C spelling in
prompts and signatures, the bit pattern an output holds until a kernel writes it, how the device
comparison turns its bits into a double, PyTorch's name for it, and the tolerance an imported
module's output of this dtype is judged with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The word an output element holds until a kernel writes it, for 4- and 8-byte elements: a float32
# NaN (and, doubled, a float64 NaN) whose leading bits are recognisable in a dump.
WORD_POISON = 0x7FBADBAD
# For 2-byte elements: a NaN in fp16 (exponent 0x1F) and bf16 (exponent 0xFF) alike, with the same
# leading bits.
HALF_POISON = 0x7FBA
# For bool elements: a byte that is neither 0 nor 1.
BOOL_POISON = 0xBA


@dataclass(frozen=True)
class OutputRule:
    """How an imported module's output of this dtype is compared with the float64 reference."""

    scale: Literal["rms_or_abs", "exact"]
    rtol: float
    why: str


_EXACT = OutputRule("exact", 0.0, "integer outputs: every element exactly")


@dataclass(frozen=True)
class DType:
    name: str  # the spelling in task files and launch plans
    numpy: str  # the NumPy dtype that carries it on the host
    c_type: str  # canonical C spelling, shown in prompts
    itemsize: int
    is_float: bool
    # Pointer element types a kernel may declare for a buffer of this dtype: vector types are
    # legitimate optimisations (float4 loads), raw bytes are legitimate for copies.
    pointer_types: frozenset[str]
    torch: str | None  # the torch.dtype attribute of the same element type (None: not imported from PyTorch)
    poison: int | None  # an output element's bits until the kernel writes it (None: bytes, not poisoned)
    compare_bits: str  # the unsigned C type the device comparison reads an element as
    to_double: str  # a C expression of those bits `b`: the element's value as a double
    output_rule: OutputRule  # an imported module's output of this dtype
    header: str | None = None  # the CUDA header that declares its C type


_BYTES = frozenset({"void", "char", "unsigned char", "signed char", "uint8_t", "int8_t"})
# Pointer types any 2-byte float buffer may be declared as besides its own: its bits (16-bit
# integers), the vector types that load several elements at once, and raw bytes.
_TWO_BYTE_WORDS = (
    frozenset({"unsigned short", "short", "uint16_t", "int16_t", "ushort2", "uint2", "uint4", "float4", "float2"})
    | _BYTES
)
_WORD_POISON64 = (WORD_POISON << 32) | WORD_POISON

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType(
            "float32",
            "float32",
            "float",
            4,
            True,
            frozenset({"float", "float2", "float4"}) | _BYTES,
            torch="float32",
            poison=WORD_POISON,
            compare_bits="unsigned int",
            to_double="(double)__uint_as_float(b)",
            output_rule=OutputRule(
                "rms_or_abs",
                1e-4,
                "fp32 rounding in any summation order stays near 1e-6 of the output's RMS, or of the element "
                "where it is larger (a wide softmax's peaks carry their exp's rounding, ~1e-7 of themselves, "
                "and are thousands of times the RMS); fp16, bf16 or tf32 inputs or math (2^-11 relative) "
                "land near 1e-3 and fail",
            ),
        ),
        DType(
            "float64",
            "float64",
            "double",
            8,
            True,
            frozenset({"double", "double2"}) | _BYTES,
            torch="float64",
            poison=_WORD_POISON64,
            compare_bits="unsigned long long",
            to_double="__longlong_as_double(b)",
            output_rule=OutputRule(
                "rms_or_abs", 1e-9, "float64 math against the float64 reference: only the summation order differs"
            ),
        ),
        DType(
            "float16",
            "float16",
            "__half",
            2,
            True,
            frozenset({"__half", "half", "__half2", "half2"}) | _TWO_BYTE_WORDS,
            torch="float16",
            poison=HALF_POISON,
            compare_bits="unsigned short",
            to_double="(double)harness_half_to_float(b)",
            header="cuda_fp16.h",
            output_rule=OutputRule(
                "rms_or_abs",
                1e-2,
                "the fp16 output's own rounding (2^-11 of each element) with fp32 accumulation; a wrong "
                "element or a missed tail is far outside",
            ),
        ),
        DType(
            # NumPy has no bfloat16: the host carries its bits as uint16 and converts them exactly
            # (engine/task/bfloat16.py); kernels see __nv_bfloat16 (<cuda_bf16.h>) or the raw bits.
            "bfloat16",
            "uint16",
            "__nv_bfloat16",
            2,
            True,
            frozenset({"__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"}) | _TWO_BYTE_WORDS,
            torch="bfloat16",
            poison=HALF_POISON,
            compare_bits="unsigned short",
            to_double="(double)__uint_as_float((unsigned int)b << 16)",  # exact: bf16 is fp32's top half
            header="cuda_bf16.h",
            # Measured with PyTorch's CPU eager on the example modules (examples/pytorch/*_bf16.py)
            # against the float64 reference: attention computing in fp32 inside reaches 0.37 of the
            # bound, RMSNorm rounding twice (h to bf16, then the weight's product) 0.71, a SwiGLU MLP
            # rounding every intermediate to bf16 0.56; a dot product of 256 terms accumulated in
            # bf16 is 3x over it, of 1024 terms 6x.
            output_rule=OutputRule(
                "rms_or_abs",
                5e-2,
                "bf16 outputs carry their own rounding (8 significant bits: up to 2^-8 of each element, which is "
                "up to ~8x the output's RMS in "
                "the tails, twice where the module rounds between steps) on top of fp32 arithmetic; a "
                "reduction of hundreds of terms accumulated in bf16 is off by 15% to 60% and fails",
            ),
        ),
        DType(
            "int32",
            "int32",
            "int",
            4,
            False,
            frozenset({"int", "int32_t", "unsigned int", "unsigned", "uint32_t", "int2", "int4", "uint2", "uint4"})
            | _BYTES,
            torch="int32",
            poison=WORD_POISON,
            compare_bits="unsigned int",
            to_double="(double)(int)b",
            output_rule=_EXACT,
        ),
        DType(
            "uint32",
            "uint32",
            "unsigned int",
            4,
            False,
            frozenset({"unsigned int", "unsigned", "uint32_t", "int", "int32_t", "uint2", "uint4", "int2", "int4"})
            | _BYTES,
            torch=None,  # PyTorch's uint32 has too few operations to run a module in
            poison=WORD_POISON,
            compare_bits="unsigned int",
            to_double="(double)b",
            output_rule=_EXACT,
        ),
        DType(
            "int64",
            "int64",
            "long long",
            8,
            False,
            frozenset(
                {
                    "long long",
                    "long long int",
                    "int64_t",
                    "unsigned long long",
                    "uint64_t",
                    "long",
                    "longlong2",
                }
            )
            | _BYTES,
            torch="int64",
            poison=_WORD_POISON64,
            compare_bits="unsigned long long",
            to_double="(double)(long long)b",
            output_rule=_EXACT,
        ),
        DType(
            "uint8",
            "uint8",
            "unsigned char",
            1,
            False,
            frozenset({"uchar4", "uchar2", "unsigned int", "uint4"}) | _BYTES,
            torch="uint8",
            poison=None,
            compare_bits="unsigned char",
            to_double="(double)b",
            output_rule=_EXACT,
        ),
        DType(
            "int8",
            "int8",
            "signed char",
            1,
            False,
            frozenset({"char4", "int"}) | _BYTES,
            torch="int8",
            poison=None,
            compare_bits="unsigned char",
            to_double="(double)(signed char)b",
            output_rule=_EXACT,
        ),
        # One byte per element holding 0 or 1 (PyTorch's and C++'s layout). Its poison is a byte no
        # bool holds, so unlike the other byte types an unwritten element is recognisable.
        DType(
            "bool",
            "bool",
            "bool",
            1,
            False,
            frozenset({"bool", "uchar4", "uchar2", "unsigned int", "uint4"}) | _BYTES,
            torch="bool",
            poison=BOOL_POISON,
            compare_bits="unsigned char",
            to_double="(double)b",
            output_rule=_EXACT,
        ),
    )
}


def dtype_of_torch(name: str) -> DType | None:
    """The task dtype of a torch dtype ("torch.float32" or "float32"); None for one tasks cannot hold."""
    short = name.removeprefix("torch.")
    return next((d for d in DTYPES.values() if d.torch == short), None)


def dtype_of_numpy(name: str) -> DType | None:
    """The task dtype a host array of this NumPy dtype holds when nothing else says which: the one
    carried natively (a dtype carried in another's bits is never guessed)."""
    return next((d for d in DTYPES.values() if d.numpy == name == d.name), None)


@dataclass(frozen=True)
class ScalarType:
    name: str  # int32 | int64 | uint32 | uint64 | float32 | float64
    c_types: frozenset[str]  # parameter spellings that receive this scalar unchanged
    size: int
    is_float: bool
    ctypes: str  # the ctypes type a launch packs it as
    signed: bool = True

    @property
    def bounds(self) -> tuple[int, int] | None:
        """What an integer of this type can hold (an argument outside would wrap silently)."""
        if self.is_float:
            return None
        bits = 8 * self.size
        return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if self.signed else (0, 2**bits - 1)


SCALAR_TYPES: dict[str, ScalarType] = {
    s.name: s
    for s in (
        ScalarType("int32", frozenset({"int", "int32_t", "signed int", "signed"}), 4, False, "c_int32"),
        ScalarType("uint32", frozenset({"unsigned int", "unsigned", "uint32_t"}), 4, False, "c_uint32", signed=False),
        ScalarType(
            "int64",
            frozenset({"long long", "long long int", "int64_t", "long", "long int", "ptrdiff_t", "signed long long"}),
            8,
            False,
            "c_int64",
        ),
        ScalarType(
            "uint64",
            frozenset({"unsigned long long", "unsigned long long int", "uint64_t", "size_t", "unsigned long"}),
            8,
            False,
            "c_uint64",
            signed=False,
        ),
        ScalarType("float32", frozenset({"float"}), 4, True, "c_float"),
        ScalarType("float64", frozenset({"double"}), 8, True, "c_double"),
    )
}


def scalar_type_of_c(c_type: str) -> ScalarType | None:
    """The scalar type a C parameter spelling denotes (None if it is not a plain scalar)."""
    for st in SCALAR_TYPES.values():
        if c_type in st.c_types:
            return st
    return None
