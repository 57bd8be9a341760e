"""A few lines compiled in front of every candidate: what NVRTC lacks without headers.

NVRTC has no C library headers, so `INFINITY`, `FLT_MAX`, `INT_MAX`, `M_PI` and `uint32_t` are
undefined in a kernel that includes nothing, and a model that uses them (they all do) loses a
round to "identifier is undefined". The prelude ends with `#line 1 "candidate.cu"`, so every line
number in a diagnostic and in the line info is the candidate's own.
"""

from __future__ import annotations

from cuda_llm.engine.compile.result import CANDIDATE_FILE

PRELUDE_FILE = "cuda-llm-prelude.h"

# The same types libcu++ declares under NVRTC (cuda/std/cstdint), so a candidate that also
# includes <cuda/std/cstdint> redeclares them identically, which C++ allows.
_TYPES = """\
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
"""

# <math.h>, <float.h> and <limits.h> values, each guarded. libcu++ defines the same names
# unguarded (<cuda/std/climits>, <cfloat>, <cmath>); its definitions then replace these.
_MACROS = {
    "INFINITY": "__int_as_float(0x7f800000)",  # CUDART_INF_F: NVRTC has no constexpr inf
    "NAN": "__int_as_float(0x7fffffff)",  # CUDART_NAN_F
    "HUGE_VALF": "__int_as_float(0x7f800000)",
    "HUGE_VAL": "__longlong_as_double(0x7ff0000000000000LL)",
    "FLT_MAX": "3.402823466e+38F",
    "FLT_MIN": "1.175494351e-38F",
    "FLT_EPSILON": "1.192092896e-07F",
    "DBL_MAX": "1.7976931348623158e+308",
    "DBL_MIN": "2.2250738585072014e-308",
    "DBL_EPSILON": "2.2204460492503131e-016",
    "CHAR_BIT": "8",
    "INT_MAX": "2147483647",
    "INT_MIN": "(-2147483647 - 1)",
    "UINT_MAX": "0xffffffffU",
    "LLONG_MAX": "9223372036854775807LL",
    "LLONG_MIN": "(-9223372036854775807LL - 1)",
    "ULLONG_MAX": "0xffffffffffffffffULL",
    "M_PI": "3.14159265358979323846",
    "M_PI_2": "1.57079632679489661923",
    "M_PI_4": "0.78539816339744830962",
    "M_1_PI": "0.31830988618379067154",
    "M_2_PI": "0.63661977236758134308",
    "M_2_SQRTPI": "1.12837916709551257390",
    "M_E": "2.7182818284590452354",
    "M_LN2": "0.69314718055994530942",
    "M_LN10": "2.30258509299404568402",
    "M_LOG2E": "1.4426950408889634074",
    "M_LOG10E": "0.43429448190325182765",
    "M_SQRT2": "1.41421356237309504880",
    "M_SQRT1_2": "0.70710678118654752440",
}
_MACRO_TEXT = "".join(f"#ifndef {name}\n#define {name} {value}\n#endif\n" for name, value in _MACROS.items())
PRELUDE_MACROS: tuple[str, ...] = tuple(_MACROS)

# Headers that bring libcu++ (and with it the names above) along.
_LIBCUDACXX_PREFIXES = ("cuda/", "cub/", "nv/", "cooperative_groups")


def pulls_libcudacxx(headers: tuple[str, ...]) -> bool:
    return any(h.startswith(_LIBCUDACXX_PREFIXES) for h in headers)


def prelude_for(headers: tuple[str, ...]) -> str:
    """The prelude for a candidate that includes `headers`, ending with the `#line` that makes
    the candidate's first line line 1 again."""
    # libcu++ headers redefine some of these unguarded, and which ones depends on the version
    # (13.5's <cooperative_groups.h> pulls <cuda/std/cfloat> in, 13.0's does not), so the macros
    # are always defined and the redefinition warning is silenced when libcu++ comes along.
    quiet = "#pragma nv_diag_suppress 47\n" if pulls_libcudacxx(headers) else ""
    macros = quiet + _MACRO_TEXT
    # Named lines of its own, so a note that points into the prelude is not read as the
    # candidate's line 8.
    return f'#line 1 "{PRELUDE_FILE}"\n{_TYPES}{macros}#line 1 "{CANDIDATE_FILE}"\n'


def with_prelude(text: str, headers: tuple[str, ...]) -> str:
    return prelude_for(headers) + text
