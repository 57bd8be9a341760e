"""Write the task folder of an imported module: task.toml, module.py (the user's file as it was),
reference.py (the module in float64), and baseline.cu/.json.

The baseline of an imported task is PyTorch eager: the GPU worker runs module.py at its own dtype
in place of baseline.cu (engine/gpu/eager.py), validated and timed like any program, so
"speedup over the baseline" means speedup over eager everywhere (eval, the loop, bench). The
kernel in baseline.cu is never run: it shows the calling convention (every buffer, then every
size, in task.toml's order) and leaves its outputs unwritten, so running it by mistake fails.

Everything is written to a temporary folder beside the destination, loaded back as a task, and
renamed into place only then: a refusal leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cuda_llm.engine.core.errors import TaskFileError, UserError
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.plan import MAX_ARGS, MAX_LAUNCHES
from cuda_llm.engine.task.scaffold import MAX_NAME_CHARS, check_task_name
from cuda_llm.engine.torchtask.byte_count import byte_count
from cuda_llm.engine.torchtask.inspect_module import ModuleFacts, TensorFacts
from cuda_llm.engine.torchtask.training import rule_text

MODULE_FILE = "module.py"
BASELINE_KERNEL = "eager_module"
# How a constant number from get_inputs() is declared in the calling-convention kernel.
SCALAR_C_TYPES = {"int32": "int", "int64": "long long", "float64": "double"}
# A name cut to fit ends in this many hex digits of its file name's SHA-1: two long names that
# share their start stay apart (32 bits: a clash needs tens of thousands of such files).
NAME_DIGEST_CHARS = 8
# int32 sizes unless a value needs more.
_INT32_MAX = 2**31 - 1


def default_name(facts: ModuleFacts) -> str:
    return name_for(facts.source)


def name_for(source: Path) -> str:
    """The file's name as a task name (when no --name is given): an identifier of at most
    MAX_NAME_CHARS, the same for the same file name on every machine (a long name keeps its start and
    gains a digest of the whole)."""
    stem = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in source.stem)
    name = stem if stem and not stem[0].isdigit() else f"module_{stem}"
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.sha1(source.stem.encode()).hexdigest()[:NAME_DIGEST_CHARS]
    return f"{name[: MAX_NAME_CHARS - NAME_DIGEST_CHARS - 1].rstrip('_')}_{digest}"


def check_destination(source: Path, root: Path, name: str | None = None) -> Path:
    """The folder the task of `source` will be, checked before the module runs (a bad --name or a
    folder already there is told at once, not after the import's seconds of work). Raises UserError."""
    name = name or name_for(source)
    check_task_name(name)
    folder = Path(root) / name
    if folder.exists():
        raise UserError(f"{folder} already exists; choose another name with --name or remove that folder")
    return folder


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string for what we write


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _toml_table(values: Mapping[str, object]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + " }"


def _tolerance(outputs: tuple[TensorFacts, ...]) -> tuple[str, float, str]:
    """The loosest of the outputs' rules (engine/task/dtypes.py `output_rule`). Float outputs are
    compared with |error| <= rtol * max(|expected|, RMS(expected output)): relative to the whole
    output where an element is near zero (a sum with cancellation, softmax's small entries), and to
    the element where it stands far above the RMS (a wide softmax's peaks, whose exp rounds by a
    share of their own size)."""
    rule = max((DTYPES[t.dtype].output_rule for t in outputs), key=lambda r: r.rtol)
    return rule.scale, rule.rtol, rule.why


def _count(t: TensorFacts, sizes: dict[str, int]) -> int:
    n = 1
    for d in t.shape:
        n *= expr.evaluate(d, sizes)
    return n


def _category(facts: ModuleFacts) -> str:
    if facts.flops != "0":
        return "compute"
    ins = sum(_count(t, facts.sizes) for t in facts.inputs)
    outs = sum(_count(t, facts.sizes) for t in facts.outputs)
    return "reduction" if outs * 2 <= ins else "memory"


def _roofline_bytes(tensors: tuple[TensorFacts, ...]) -> str:
    return byte_count(((DTYPES[t.dtype].itemsize, t.shape) for t in tensors), limit=expr.MAX_EXPRESSION_CHARS)


def _summary(facts: ModuleFacts) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(facts.source.read_text(encoding="utf-8")))
    except (SyntaxError, UnicodeDecodeError):
        doc = None
    first = (doc or "").strip().splitlines()[0].strip() if doc and doc.strip() else ""
    return first or f"PyTorch module {facts.source.name}"


def _description(facts: ModuleFacts) -> str:
    ins = ", ".join(facts.forward_inputs or [t.name for t in facts.inputs])
    lines = [
        f"Imported from the PyTorch module {facts.source.name} (module.py below): write CUDA kernels that",
        "compute what Model.forward returns, with the module's own arithmetic.",
        f"Inputs: forward's arguments in order ({ins}).",
    ]
    if facts.params:
        pairs = ", ".join(f"{t.name} is self.{t.path}" for t in facts.params)
        lines.append(
            f"The module's parameters and buffers are inputs too, with the values the harness gives them: {pairs}."
        )
    if len(facts.outputs) > 1:
        outs = ", ".join(t.name for t in facts.outputs)
        lines.append(f"Outputs: the tensors forward returns, in order ({outs}).")
    else:
        lines.append(f"Output: {facts.outputs[0].name}, the tensor forward returns.")
    lines.append("Every tensor is contiguous, row-major (C order), in the shapes listed under Buffers.")
    lines += _type_notes(facts)
    if facts.batch_statistics:
        lines.append(rule_text(facts.batch_statistics))
    if facts.sizes:
        names = ", ".join(facts.sizes)
        lines.append(
            f"The sizes are the module's constants ({names}): any positive values, not only the file's; "
            "none is necessarily a multiple of a tile or vector width."
        )
    for k, parts in facts.tuples.items():
        lines.append(f"{k} in the file is the tuple ({', '.join(map(str, parts))}) of these sizes.")
    if facts.fixed:
        lines.append(
            "Constants kept at the file's values: " + ", ".join(f"{k} = {v}" for k, v in facts.fixed.items()) + "."
        )
    lines.append("The baseline is PyTorch eager running the module at its own dtype on the same GPU.")
    return "\n".join(lines)


def _type_notes(facts: ModuleFacts) -> list[str]:
    """What the prompt must say of the tensors and arguments that are not plain arrays."""
    tensors = (*facts.inputs, *facts.params, *facts.outputs)
    lines = []
    zero_d = [t.name for t in tensors if not t.shape]
    if zero_d:
        lines.append(f"0-d tensors (one element; a pointer to it in the kernel, as every buffer): {', '.join(zero_d)}.")
    bools = [t.name for t in tensors if t.dtype == "bool"]
    if bools:
        lines.append(
            f"bool tensors ({', '.join(bools)}): one byte per element holding 0 (false) or 1 (true), C++ bool; "
            "write an output as true/false (or the bytes 1/0), never another byte."
        )
    for n in facts.numbers:
        if n.type == "size":
            lines.append(f"{n.name} is the number get_inputs() passes as item {n.position}: a scalar, given per size.")
        else:
            lines.append(f"{n.name} is the number get_inputs() passes as item {n.position}: the scalar {n.value!r}.")
    return lines


def _dtype_contract(facts: ModuleFacts) -> str:
    dtypes = sorted({t.dtype for t in (*facts.inputs, *facts.params, *facts.outputs)})
    text = f"{', '.join(dtypes)} tensors, as the module has them"
    if "float32" in dtypes:
        text += "; fp32 arithmetic or better (fp16, bf16 or tf32 math is not accurate enough and fails validation)"
    if "float16" in dtypes:
        text += "; fp16 values with fp32 accumulation where PyTorch accumulates (sums, products, norms)"
    if "bfloat16" in dtypes:
        text += (
            "; bf16 values (__nv_bfloat16 from <cuda_bf16.h>, 8 significant bits) computed in fp32 where the "
            "module or PyTorch does (every sum, dot product, norm and softmax accumulates in fp32; bf16 tensor "
            "cores with fp32 accumulators are fine) and rounded to bf16 where the module stores a bf16 tensor; "
            "a long sum accumulated in bf16 is off by percents and fails validation"
        )
    return text + "."


def _where(facts: ModuleFacts, size: str) -> str:
    """How the file spells a size: its own constant, an element of a tuple constant, or a number
    get_inputs() returns."""
    for n in facts.numbers:
        if n.name == size:
            return f"get_inputs() item {n.position}"
    for k, parts in facts.tuples.items():
        if size in parts:
            return f"{k}[{parts.index(size)}]"
    return size


def _sizes_block(facts: ModuleFacts) -> tuple[dict[str, int], list[dict[str, int]]]:
    if not facts.sizes:
        timing, cases = {"unit": 1}, [{"unit": 1}]
    else:
        timing = dict(facts.sizes)
        cases = [dict(c) for c in facts.validation]
        # The file's own shapes with several seeds (the loader adds the timing case with one more).
        cases.append(timing)
    return _with_case_numbers(facts, timing, cases)


def _with_case_numbers(
    facts: ModuleFacts, timing: dict[str, int], cases: list[dict[str, int]]
) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Numbers from get_inputs() that follow the sizes are given per case, beside the sizes."""
    varying = [n for n in facts.numbers if n.type == "size"]
    if not varying:
        return timing, cases
    timing = {**timing, **{n.name: n.per_case[-1] for n in varying}}
    if not facts.sizes:  # the placeholder case is the timing size
        return timing, [timing]
    return timing, [{**c, **{n.name: n.per_case[i] for n in varying}} for i, c in enumerate(cases)]


def _number_lines(facts: ModuleFacts) -> list[str]:
    """[scalars] lines of the constant numbers among get_inputs()."""
    out = []
    for n in facts.numbers:
        if n.type != "size":
            doc = f"get_inputs() item {n.position} in {facts.source.name}"
            out.append(f"{n.name} = {{ type = {_q(n.type)}, value = {n.value!r}, doc = {_q(doc)} }}")
    return out


def task_toml(name: str, facts: ModuleFacts) -> str:
    timing, cases = _sizes_block(facts)
    scale, rtol, why = _tolerance(facts.outputs)
    flops = facts.flops
    # fp16 and bf16 run at the same tensor-core rate.
    halves = any(DTYPES[t.dtype].is_float and DTYPES[t.dtype].itemsize == 2 for t in facts.inputs)
    peak = "fp16_tensor" if flops != "0" and halves else "fp32"
    out = [
        f"# Imported from {facts.source.name} by `cuda-llm tasks import`. The module itself is module.py;",
        "# reference.py runs it in float64, and the baseline is PyTorch eager (baseline.cu only shows the",
        "# calling convention). The sizes are the module's constants: edit [sizes] to change them.",
        "",
        f"name = {_q(name)}",
        f"summary = {_q(_summary(facts))}",
        f"category = {_q(_category(facts))}",
        f"dtype_contract = {_q(_dtype_contract(facts))}",
        f'description = """\n{_description(facts)}\n"""',
        "",
        "[scalars]",
    ]
    for k, v in timing.items():
        ctype = "int64" if v > _INT32_MAX else "int32"
        doc = (
            "a placeholder: the module has no size constants"
            if k == "unit" and not facts.sizes
            else f"{_where(facts, k)} in {facts.source.name}"
        )
        out.append(f"{k} = {{ type = {_q(ctype)}, doc = {_q(doc)} }}")
    out += _number_lines(facts)
    for role, tensors in (("input", (*facts.inputs, *facts.params)), ("output", facts.outputs)):
        for t in tensors:
            out += ["", f"[buffers.{t.name}]", f"dtype = {_q(t.dtype)}", f"shape = {_toml_list(list(t.shape))}"]
            out.append(f"role = {_q(role)}")
    out += [
        "",
        "[sizes]",
        f"# The file's values: {_toml_table(timing)}. Smaller cases keep the fitted shapes.",
        f"timing = {_toml_table(timing)}",
        "validation = [",
        *(f"    {_toml_table(c)}," for c in cases),
        "]",
        "",
        "[tolerance]",
        f"scale = {_q(scale)}",
        f"rtol = {rtol!r}",
        "atol = 1e-30" if scale != "exact" else "atol = 0.0",
        f"why = {_q(why)}",
        "",
        "[roofline]",
        f"bytes = {_q(_roofline_bytes((*facts.inputs, *facts.params, *facts.outputs)))}",
        f"flops = {_q(flops)}",
        f"peak = {_q(peak)}",
        "",
        "[pytorch]",
        f"module = {_q(MODULE_FILE)}",
        f"inputs = {_toml_list(list(facts.forward_inputs) or [t.name for t in facts.inputs])}",
        f"outputs = {_toml_list([t.name for t in facts.outputs])}",
        f"parameters = {_toml_table({t.name: t.path for t in facts.params})}",
        f"fixed = {_toml_table(facts.fixed)}",
        f"tuples = {_toml_table({k: list(v) for k, v in facts.tuples.items()})}",
        f"returns_tuple = {'true' if len(facts.outputs) > 1 or facts.returns_tuple else 'false'}",
        "",
    ]
    return "\n".join(out)


REFERENCE_PY = '''\
"""The reference of this imported task: module.py's Model in float64 (cuda-llm tasks import).

generate() makes the inputs with get_inputs() and the parameters with Model(*get_init_inputs()),
seeded from the task's seed; reference() runs forward on them in float64 (on the GPU when there
is one and the problem is large)."""

from pathlib import Path

import numpy as np

from cuda_llm.engine.torchtask.runtime import ImportedModule

_MODULE = ImportedModule(Path(__file__).parent)


def generate(sizes, rng):
    return _MODULE.generate(sizes, rng)


def reference(inputs, params, dtype=np.float64):
    return _MODULE.reference(inputs, params, dtype)
'''


def baseline_files(name: str, facts: ModuleFacts, timing: dict[str, int]) -> tuple[str, str]:
    params = []
    for t in (*facts.inputs, *facts.params):
        params.append(f"const {DTYPES[t.dtype].c_type}* __restrict__ {t.name}")
    for t in facts.outputs:
        params.append(f"{DTYPES[t.dtype].c_type}* __restrict__ {t.name}")
    args: list[object] = [t.name for t in (*facts.inputs, *facts.params, *facts.outputs)]
    for k, v in timing.items():
        wide = v > _INT32_MAX
        params.append(f"{'long long' if wide else 'int'} {k}")
        args.append({"expr": k, "type": "int64"} if wide else k)
    for n in facts.numbers:
        if n.type != "size":
            params.append(f"{SCALAR_C_TYPES[n.type]} {n.name}")
            args.append(n.name)
    headers = sorted({h for t in (*facts.inputs, *facts.params, *facts.outputs) if (h := DTYPES[t.dtype].header)})
    include = "".join(f"#include <{h}>\n" for h in headers) + ("\n" if headers else "")
    nbuf = len(facts.inputs) + len(facts.params) + len(facts.outputs)
    kernels = stub_kernels(facts, params[:nbuf], args[:nbuf], params[nbuf:], args[nbuf:])
    source = (
        f"// The baseline of {name} is PyTorch eager: module.py's Model at its own dtype, run and timed by\n"
        "// the harness in place of this kernel. The kernel only shows the calling convention: every\n"
        "// buffer (inputs, the module's parameters, outputs), then every size and scalar, in task.toml's order.\n"
        + (
            f"// A kernel takes at most {MAX_ARGS} arguments: the buffers are shared out over {len(kernels)} of them.\n"
            if len(kernels) > 1
            else ""
        )
        + include
        + "\n".join(
            f'extern "C" __global__ void {kernel}(\n    ' + ",\n    ".join(decl) + ")\n{\n}\n"
            for kernel, decl, _ in kernels
        )
    )
    launches = [
        {"kernel": kernel, "grid": [1], "block": [1], "shared_bytes": 0, "args": kernel_args}
        for kernel, _, kernel_args in kernels
    ]
    return source, json.dumps({"launches": launches}, indent=1) + "\n"


def stub_kernels(
    facts: ModuleFacts, buffer_decl: list[str], buffer_args: list[object], tail_decl: list[str], tail_args: list[object]
) -> list[tuple[str, list[str], list[object]]]:
    """The stub baseline's kernels (name, parameters, plan arguments): one taking every buffer and
    then the sizes, or, for a whole model with more buffers than one launch passes, several, each
    taking its share of the buffers and then the sizes. Raises UserError past what a plan holds."""
    if len(buffer_args) + len(tail_args) <= MAX_ARGS:
        return [(BASELINE_KERNEL, buffer_decl + tail_decl, buffer_args + tail_args)]
    share = MAX_ARGS - len(tail_args)
    count = -(-len(buffer_args) // share) if share > 0 else MAX_LAUNCHES + 1
    if count > MAX_LAUNCHES:
        raise UserError(
            f"{facts.source.name} has {len(buffer_args)} tensors (inputs, parameters, buffers, outputs) and "
            f"{len(tail_args)} sizes: a task's launch plan passes at most {MAX_LAUNCHES} x {MAX_ARGS} arguments; "
            "import a part of the model (a block) instead"
        )
    return [
        (
            f"{BASELINE_KERNEL}_{i}",
            buffer_decl[i * share : (i + 1) * share] + tail_decl,
            buffer_args[i * share : (i + 1) * share] + tail_args,
        )
        for i in range(count)
    ]


def _what(facts: ModuleFacts, field: str | None) -> str:
    """The part of the module a task file's field came from, in the module's terms."""
    parts = (field or "").split(".")
    if parts[0] == "buffers" and len(parts) > 1:
        for t in facts.inputs:
            if t.name == parts[1]:
                return f"forward's argument {t.name}"
        for t in facts.params:
            if t.name == parts[1]:
                return f"self.{t.path}"
        return "forward's result"
    return {
        "roofline": "the count of bytes it moves",
        "sizes": "its size constants",
        "scalars": "its size constants",
    }.get(parts[0], "the module")


def unexpressed(facts: ModuleFacts, exc: TaskFileError) -> str:
    """The one line for a module the task format cannot hold as written: the file, which of its
    tensors or counts, the format's reason, what to do; never the staging path or a TOML key."""
    return (
        f"{facts.source.name} cannot become a task: {_what(facts, exc.field)} cannot be expressed "
        f"({exc.problem}); change that in the file, or report it as an importer limitation"
    )


def write_task(facts: ModuleFacts, root: Path, name: str | None = None) -> Path:
    """Create root/NAME from the facts; return the folder. Nothing is left behind on a failure."""
    name = name or default_name(facts)
    folder = check_destination(facts.source, root, name)
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    except OSError as exc:
        raise UserError(f"cannot create a task in {root}: {exc.strerror}") from None
    try:
        work = staging / name
        work.mkdir()
        timing, _ = _sizes_block(facts)
        source, plan = baseline_files(name, facts, timing)
        (work / "task.toml").write_text(task_toml(name, facts), encoding="utf-8")
        shutil.copyfile(facts.source, work / MODULE_FILE)
        (work / "reference.py").write_text(REFERENCE_PY, encoding="utf-8")
        (work / "baseline.cu").write_text(source, encoding="utf-8")
        (work / "baseline.json").write_text(plan, encoding="utf-8")
        try:
            load_task(work)
        except TaskFileError as exc:  # a module this writer does not yet express: say so, write nothing
            raise UserError(unexpressed(facts, exc)) from None
        try:
            work.rename(folder)
        except OSError as exc:
            raise UserError(f"cannot create {folder}: {exc.strerror}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
