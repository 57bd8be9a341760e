"""The element and scalar types a task can declare, with their NumPy and C spellings.

One table, so the task loader, the plan binder and the GPU worker agree on sizes and names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str  # the spelling in task files and launch plans
    numpy: str  # numpy dtype name
    c_type: str  # canonical C spelling, shown in prompts
    itemsize: int
    is_float: bool
    # Pointer element types a kernel may declare for a buffer of this dtype: vector types are
    # legitimate optimisations (float4 loads), raw bytes are legitimate for copies.
    pointer_types: frozenset[str]


_BYTES = frozenset({"void", "char", "unsigned char", "signed char", "uint8_t", "int8_t"})

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float32", "float32", "float", 4, True, frozenset({"float", "float2", "float4"}) | _BYTES),
        DType("float64", "float64", "double", 8, True, frozenset({"double", "double2"}) | _BYTES),
        DType(
            "float16",
            "float16",
            "__half",
            2,
            True,
            frozenset(
                {
                    "__half",
                    "half",
                    "__half2",
                    "half2",
                    "unsigned short",
                    "short",
                    "uint16_t",
                    "int16_t",
                    "ushort2",
                    "uint2",
                    "uint4",
                    "float4",
                    "float2",
                }
            )
            | _BYTES,
        ),
        DType(
            "int32",
            "int32",
            "int",
            4,
            False,
            frozenset({"int", "int32_t", "unsigned int", "unsigned", "uint32_t", "int2", "int4", "uint2", "uint4"})
            | _BYTES,
        ),
        DType(
            "uint32",
            "uint32",
            "unsigned int",
            4,
            False,
            frozenset({"unsigned int", "unsigned", "uint32_t", "int", "int32_t", "uint2", "uint4", "int2", "int4"})
            | _BYTES,
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
        ),
        DType(
            "uint8",
            "uint8",
            "unsigned char",
            1,
            False,
            frozenset({"uchar4", "uchar2", "unsigned int", "uint4"}) | _BYTES,
        ),
        DType("int8", "int8", "signed char", 1, False, frozenset({"char4", "int"}) | _BYTES),
    )
}


@dataclass(frozen=True)
class ScalarType:
    name: str  # int32 | int64 | uint32 | uint64 | float32 | float64
    c_types: frozenset[str]  # parameter spellings that receive this scalar unchanged
    size: int
    is_float: bool


SCALAR_TYPES: dict[str, ScalarType] = {
    s.name: s
    for s in (
        ScalarType("int32", frozenset({"int", "int32_t", "signed int", "signed"}), 4, False),
        ScalarType("uint32", frozenset({"unsigned int", "unsigned", "uint32_t"}), 4, False),
        ScalarType(
            "int64",
            frozenset({"long long", "long long int", "int64_t", "long", "long int", "ptrdiff_t", "signed long long"}),
            8,
            False,
        ),
        ScalarType(
            "uint64",
            frozenset({"unsigned long long", "unsigned long long int", "uint64_t", "size_t", "unsigned long"}),
            8,
            False,
        ),
        ScalarType("float32", frozenset({"float"}), 4, True),
        ScalarType("float64", frozenset({"double"}), 8, True),
    )
}


def scalar_type_of_c(c_type: str) -> ScalarType | None:
    """The scalar type a C parameter spelling denotes (None if it is not a plain scalar)."""
    for st in SCALAR_TYPES.values():
        if c_type in st.c_types:
            return st
    return None
