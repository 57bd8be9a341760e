"""`cuda-llm tasks new NAME`: a new task folder that loads and validates as it is.

The scaffold is a complete, working task (y = factor * x on a float32 vector) rather than a
form full of blanks: a user starts from something the harness accepts and changes it one file
at a time, and every file's comments say what each part means and what to edit.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.loader import REFERENCE_FILE, TASK_FILE

# A C identifier: the name doubles as a Python module suffix and appears in kernel names.
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Longer names make unreadable tables and kernel symbols; no real task needs more.
MAX_NAME_CHARS = 64

_TASK_TOML = Template('''\
# A new task, made by `cuda-llm tasks new $name`. As it stands it loads and validates: it scales a
# float32 vector, y = factor * x. Make it yours by editing the four files of this folder:
#   task.toml      what the kernel must do, its buffers, scalars, sizes, tolerance and roofline;
#   reference.py   generate() makes seeded inputs, reference() computes the outputs with NumPy;
#   baseline.cu    the straightforward kernel that speed-ups are measured against;
#   baseline.json  the baseline's launch plan: grid, block and arguments, by name.
# `cuda-llm tasks` lists the task, or the one line that says what is wrong with it.

name = "$name"  # must stay equal to the folder's name
summary = "Scale a float32 vector: y = factor * x"
# memory, reduction, ai or compute: how the task is grouped in listings.
category = "memory"
# In words, for the prompt: which precision the arithmetic must keep.
dtype_contract = "float32 in and out; the product is computed in fp32 (no fp16, bf16 or tf32)."
# The model reads this word for word: say exactly what each buffer holds, its layout and index
# formula, and what happens at the edges (sizes that are no multiple of a block, a size of 1).
description = """
Given a float32 vector x of n elements and the float32 constant factor (passed to the kernel as
a float argument), write y[i] = factor * x[i] for every 0 <= i < n. n is any positive integer
(including 1, and values that are not a multiple of the block size or of a vector width).
"""

# Scalars are passed to kernels by value. A size is an integer without a value (each size case
# below gives it); a constant has a value. Types: int32, uint32, int64, uint64, float32, float64.
[scalars]
n = { type = "int32", doc = "number of elements" }
factor = { type = "float32", value = 2.0, doc = "the scale factor" }

# Buffers: dtype (one of $dtypes), shape as integer
# expressions of the sizes (+ - * // % min max cdiv), role input or output. Inputs are
# read-only for the kernel; outputs are filled with NaN (integers with 0x7FBADBAD) before every
# run, so a kernel must write every output element.
[buffers.x]
dtype = "float32"
shape = ["n"]
role = "input"

[buffers.y]
dtype = "float32"
shape = ["n"]
role = "output"

[sizes]
# The timing size: big enough that the roofline floor, max(bytes / 3.0e12 B/s,
# flops / 65e12 FLOP/s) on an H100, is at least ~100 us, small enough that all buffers fit an
# 8 GB card. Here 2 x 4 x 2^26 bytes = 537 MB moved: a 179 us floor.
timing = { n = 67108864 }
# Validation sizes: small and odd ones that catch missing bounds checks. The timing size is
# validated too; it is added automatically.
validation = [{ n = 1 }, { n = 3 }, { n = 1000 }, { n = 65537 }, { n = 1048579 }]

[tolerance]
# An output element passes when |got - expected| <= atol + rtol * scale, where scale is
# "abs" (|expected|, element by element), "rms" (the RMS of the expected output), "rms_or_abs"
# (the larger of the two, element by element), "custom"
# (the per-element error_scale() of reference.py) or "exact" (bit for bit; no rtol or atol).
# Choose rtol so that correct fp32 code passes with a 10x margin and fp16 shortcuts fail.
# Here: one fp32 rounding of factor * x, |error| <= 2^-24 |y| (6e-8); 1e-6 leaves a 16x
# margin, and fp16 (relative error ~5e-4) fails by 500x.
scale = "abs"
rtol = 1e-6
atol = 1e-30
why = "a single fp32 rounding of factor * x"

[roofline]
# Minimal bytes moved through device memory and the flops, as expressions of the sizes; peak
# says which ceiling the flops count against: fp32, fp16_tensor or none.
bytes = "8 * n"
flops = "n"
peak = "fp32"
''')

_REFERENCE_PY = Template('''\
"""$name: y = factor * x.

generate(sizes, rng) returns every input buffer with exactly the dtype and shape of task.toml,
seeded by rng, with realistic values (never all zero, no NaN or inf).
reference(inputs, params, dtype) returns every output buffer computed in `dtype`: float64 for
judging; the tests also pass float32 and float16 to show that the tolerance accepts correct
fp32 code and rejects fp16 shortcuts, so cast the inputs to `dtype` and compute in it.
params holds every scalar of task.toml: the sizes of the case and the constants.
With tolerance.scale = "custom", also define error_scale(inputs, params) returning, for every
output, the non-negative magnitude its error is measured against (e.g. a running sum of |x|).
"""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    return {"x": rng.uniform(-100.0, 100.0, n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # The kernel receives factor as a float32, so that is the value the reference uses.
    factor = dtype(np.float32(params["factor"]))
    return {"y": factor * inputs["x"].astype(dtype)}
''')

_BASELINE_CU = Template("""\
// The straightforward kernel a competent programmer writes first: one thread per element.
// Kernels are extern "C" __global__ with their parameter types spelled out; buffers arrive as
// pointers (const for inputs), sizes as int, constants with their declared type.
extern "C" __global__ void ${name}_kernel(const float* x, float* y, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = factor * x[i];
    }
}
""")

# Arguments name task buffers, scratch buffers, scalars, or integer expressions of the sizes.
_BASELINE_JSON = Template("""\
{
  "launches": [
    {"kernel": "${name}_kernel", "grid": ["cdiv(n, 256)"], "block": [256], "shared_bytes": 0,
     "args": ["x", "y", "factor", "n"]}
  ]
}
""")


def check_task_name(name: str) -> None:
    """Raise a one-line UserError unless `name` can name a task folder and its kernels."""
    if not _NAME_RE.match(name):
        raise UserError(
            f"task name {name!r} is not an identifier: use letters, digits and underscores, "
            "not starting with a digit (e.g. my_task)"
        )
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"task name {name!r} is longer than {MAX_NAME_CHARS} characters")


def scaffold_task(name: str, root: Path) -> Path:
    """Create root/NAME holding a complete, loadable task to edit; return the folder."""
    check_task_name(name)
    folder = Path(root) / name
    if folder.exists():
        raise UserError(f"{folder} already exists; choose another name or remove that folder")
    try:
        folder.mkdir(parents=True)
    except FileExistsError:  # created between the check and here
        raise UserError(f"{folder} already exists; choose another name or remove that folder") from None
    except OSError as exc:
        raise UserError(f"cannot create {folder}: {exc.strerror}") from None
    files = {
        TASK_FILE: _TASK_TOML,
        REFERENCE_FILE: _REFERENCE_PY,
        "baseline.cu": _BASELINE_CU,
        "baseline.json": _BASELINE_JSON,
    }
    for filename, template in files.items():
        text = template.substitute(name=name, dtypes=", ".join(DTYPES))
        (folder / filename).write_text(text, encoding="utf-8")
    return folder
