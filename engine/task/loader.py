"""Load and check a task folder. Every fault is one line naming the file, the field and the problem."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

from cuda_llm.engine.core.errors import ExpressionError, FormatError, TaskFileError
from cuda_llm.engine.core.settings import ValidationSettings
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES, SCALAR_TYPES
from cuda_llm.engine.task.model import BufferSpec, Roofline, ScalarSpec, SizeCase, Task, Tolerance
from cuda_llm.engine.task.plan import parse_plan

TASK_FILE = "task.toml"
REFERENCE_FILE = "reference.py"
CATEGORIES = ("memory", "reduction", "ai", "compute")
PEAKS = ("fp32", "fp16_tensor", "none")
SCALES = ("abs", "rms", "rms_or_abs", "custom", "exact")
_TOP_KEYS = {
    "name",
    "summary",
    "category",
    "dtype_contract",
    "description",
    "scalars",
    "buffers",
    "sizes",
    "tolerance",
    "roofline",
    "baseline",
    "pytorch",
}


class _Reader:
    """Typed access to the TOML document that raises TaskFileError naming the field."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def fail(self, field: str | None, problem: str) -> TaskFileError:
        return TaskFileError(self.path, field, problem)

    def get(
        self, table: dict[str, Any], key: str, kind: type | tuple[type, ...], field: str, default: Any = ...
    ) -> Any:
        if key not in table:
            if default is ...:
                raise self.fail(field, "missing")
            return default
        value = table[key]
        if kind is float and type(value) is int:
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(field, f"must be {_article(names)}, got {value!r}")
        return value


def _article(name: str) -> str:
    return {
        "str": "a string",
        "int": "an integer",
        "float": "a number",
        "dict": "a table",
        "list": "a list",
        "bool": "true or false",
    }.get(name, name)


# A yardstick beside the task, not part of what the task is: adding or changing it must not make
# recorded sessions of the task unresumable.
NOT_FINGERPRINTED = frozenset({"library.py"})


def _fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix in {".toml", ".py", ".cu", ".json"} and path.name not in NOT_FINGERPRINTED:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _check_expr(r: _Reader, text: Any, field: str, known: set[str]) -> str:
    if type(text) is int:
        return str(text)
    if not isinstance(text, str):
        raise r.fail(field, f"must be an integer expression string, got {text!r}")
    try:
        unknown = expr.names(text) - known
    except ExpressionError as exc:
        raise r.fail(field, str(exc)) from None
    if unknown:
        raise r.fail(field, f"unknown name(s) {sorted(unknown)}; integer scalars are {sorted(known)}")
    return text


def _scalars(r: _Reader) -> tuple[ScalarSpec, ...]:
    table = r.get(r.data, "scalars", dict, "scalars")
    out = []
    for name, spec in table.items():
        field = f"scalars.{name}"
        if not name.isidentifier():
            raise r.fail(field, "a scalar name must be a C identifier")
        if not isinstance(spec, dict):
            raise r.fail(field, 'must be a table like { type = "int32" }')
        unknown = set(spec) - {"type", "value", "doc"}
        if unknown:
            raise r.fail(field, f"unknown key(s) {sorted(unknown)}")
        stype = r.get(spec, "type", str, f"{field}.type")
        if stype not in SCALAR_TYPES:
            raise r.fail(f"{field}.type", f"{stype!r} unknown; one of {sorted(SCALAR_TYPES)}")
        value = spec.get("value")
        if value is not None:
            if SCALAR_TYPES[stype].is_float:
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise r.fail(f"{field}.value", f"must be a number, got {value!r}")
                value = float(value)
            elif type(value) is not int:
                raise r.fail(f"{field}.value", f"must be an integer, got {value!r}")
        elif SCALAR_TYPES[stype].is_float:
            raise r.fail(field, "a floating-point scalar needs a value (sizes are integers)")
        out.append(ScalarSpec(name, stype, value))
    if not any(s.is_size for s in out):
        raise r.fail("scalars", "declare at least one size (an integer scalar without a value)")
    return tuple(out)


def _buffers(r: _Reader, known: set[str], taken: set[str]) -> tuple[BufferSpec, ...]:
    table = r.get(r.data, "buffers", dict, "buffers")
    out = []
    for name, spec in table.items():
        field = f"buffers.{name}"
        if not name.isidentifier():
            raise r.fail(field, "a buffer name must be a C identifier")
        if name in taken:
            raise r.fail(field, f"{name!r} is already a scalar's name")
        if not isinstance(spec, dict):
            raise r.fail(field, "must be a table with dtype, shape and role")
        unknown = set(spec) - {"dtype", "shape", "role", "doc"}
        if unknown:
            raise r.fail(field, f"unknown key(s) {sorted(unknown)}")
        dtype = r.get(spec, "dtype", str, f"{field}.dtype")
        if dtype not in DTYPES:
            raise r.fail(f"{field}.dtype", f"{dtype!r} unknown; one of {sorted(DTYPES)}")
        # An empty shape is a 0-d tensor: one element (a loss, a count, a scalar parameter).
        shape = r.get(spec, "shape", list, f"{field}.shape")
        dims = tuple(_check_expr(r, d, f"{field}.shape[{i}]", known) for i, d in enumerate(shape))
        role = r.get(spec, "role", str, f"{field}.role")
        if role not in ("input", "output"):
            raise r.fail(f"{field}.role", f'must be "input" or "output", got {role!r}')
        out.append(BufferSpec(name, dtype, dims, role))
    if not any(b.role == "input" for b in out) or not any(b.role == "output" for b in out):
        raise r.fail("buffers", "a task needs at least one input and one output buffer")
    return tuple(out)


def _size_case(
    r: _Reader, value: Any, field: str, sizes: list[str], label: str | None, seeds: int, timing: bool
) -> SizeCase:
    if not isinstance(value, dict):
        raise r.fail(field, "must be a table of size values, e.g. { n = 1000 }")
    missing = [s for s in sizes if s not in value]
    extra = [k for k in value if k not in sizes]
    if missing:
        raise r.fail(field, f"missing size(s) {missing}")
    if extra:
        raise r.fail(field, f"unknown size(s) {extra}; the sizes are {sizes}")
    values = []
    for s in sizes:
        v = value[s]
        if type(v) is not int or v < 1:
            raise r.fail(f"{field}.{s}", f"must be a positive integer, got {v!r}")
        values.append((s, v))
    text = label or " ".join(f"{k}={v}" for k, v in values)
    return SizeCase(text, tuple(values), seeds, timing)


def _sizes(
    r: _Reader, scalars: tuple[ScalarSpec, ...], settings: ValidationSettings
) -> tuple[SizeCase, tuple[SizeCase, ...]]:
    table = r.get(r.data, "sizes", dict, "sizes")
    names = [s.name for s in scalars if s.is_size]
    timing = _size_case(
        r,
        r.get(table, "timing", dict, "sizes.timing"),
        "sizes.timing",
        names,
        None,
        settings.seeds_timing_size,
        True,
    )
    timing = SizeCase("timing " + timing.label, timing.values, timing.seeds, True)
    raw = r.get(table, "validation", list, "sizes.validation")
    if not raw:
        raise r.fail("sizes.validation", "list at least one validation size")
    cases = [
        _size_case(r, v, f"sizes.validation[{i}]", names, None, settings.seeds_per_size, False)
        for i, v in enumerate(raw)
    ]
    return timing, (*cases, timing)


def _tolerance(r: _Reader) -> Tolerance:
    t = r.get(r.data, "tolerance", dict, "tolerance")
    unknown = set(t) - {"scale", "rtol", "atol", "why"}
    if unknown:
        raise r.fail("tolerance", f"unknown key(s) {sorted(unknown)}")
    scale = r.get(t, "scale", str, "tolerance.scale")
    if scale not in SCALES:
        raise r.fail("tolerance.scale", f"{scale!r} unknown; one of {list(SCALES)}")
    rtol = r.get(t, "rtol", float, "tolerance.rtol", 0.0)
    atol = r.get(t, "atol", float, "tolerance.atol", 0.0)
    if rtol < 0 or atol < 0:
        raise r.fail("tolerance", "rtol and atol must not be negative")
    if scale != "exact" and rtol == 0 and atol == 0:
        raise r.fail("tolerance", 'give rtol or atol, or use scale = "exact"')
    return Tolerance(scale, rtol, atol)


def _roofline(r: _Reader, known: set[str]) -> Roofline:
    t = r.get(r.data, "roofline", dict, "roofline")
    unknown = set(t) - {"bytes", "flops", "peak"}
    if unknown:
        raise r.fail("roofline", f"unknown key(s) {sorted(unknown)}")
    peak = r.get(t, "peak", str, "roofline.peak", "fp32")
    if peak not in PEAKS:
        raise r.fail("roofline.peak", f"{peak!r} unknown; one of {list(PEAKS)}")
    return Roofline(
        _check_expr(r, t.get("bytes"), "roofline.bytes", known),
        _check_expr(r, t.get("flops", 0), "roofline.flops", known),
        peak,
    )


def _pytorch(r: _Reader, folder: Path, buffers: tuple[BufferSpec, ...], scalars: tuple[ScalarSpec, ...]) -> str | None:
    """The [pytorch] table of an imported task (engine/torchtask/): which buffer is which of the
    module's tensors. None for a task written by hand."""
    t = r.get(r.data, "pytorch", dict, "pytorch", None)
    if t is None:
        return None
    unknown = set(t) - {"module", "inputs", "outputs", "parameters", "fixed", "returns_tuple", "tuples"}
    if unknown:
        raise r.fail("pytorch", f"unknown key(s) {sorted(unknown)}")
    module: str = r.get(t, "module", str, "pytorch.module")
    if not _inside(r, folder, module, "pytorch.module").is_file():
        raise r.fail("pytorch.module", f"{folder / module} is missing")
    roles = {b.name: b.role for b in buffers}
    # forward's arguments are input buffers, or task scalars where get_inputs() returns a number.
    roles.update({s.name: "input" for s in scalars})
    named = [*r.get(t, "inputs", list, "pytorch.inputs"), *r.get(t, "parameters", dict, "pytorch.parameters", {})]
    for field, names, role in (
        ("pytorch.inputs", named, "input"),
        ("pytorch.outputs", r.get(t, "outputs", list, "pytorch.outputs"), "output"),
    ):
        for n in names:
            if roles.get(n) != role:
                raise r.fail(field, f"{n!r} is not an {role} buffer of this task")
    names = {s.name for s in scalars} | set(r.get(t, "fixed", dict, "pytorch.fixed", {}))
    for k, parts in r.get(t, "tuples", dict, "pytorch.tuples", {}).items():
        if not isinstance(parts, list) or not all(isinstance(p, int) or p in names for p in parts):
            raise r.fail(f"pytorch.tuples.{k}", "must list integers and the names of sizes or fixed constants")
    return module


def _inside(r: _Reader, folder: Path, name: str, field: str) -> Path:
    """A file a task.toml names, confined to its folder: what it names goes into the prompt sent to
    a model server, so an absolute path, a '..' or a link out of the folder (to a key file, say)
    is refused whatever it points at."""
    path = folder / name
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL in the name
        inside = False
    if not inside:
        raise r.fail(field, f"{name!r} is outside the task folder {folder}: name a file in the folder")
    return path


def load_task(folder: Path | str, settings: ValidationSettings | None = None) -> Task:
    """Load `folder/task.toml` and its files; raise TaskFileError with one precise line."""
    folder = Path(folder)
    settings = settings or ValidationSettings()
    path = folder / TASK_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskFileError(path, None, "no such file (a task folder holds task.toml)") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, None, f"not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested thousands deep: the parser's stack ends first
        raise TaskFileError(path, None, "not valid TOML: nested too deeply") from None
    except UnicodeDecodeError:
        raise TaskFileError(path, None, "not UTF-8 text") from None
    r = _Reader(path, data)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise r.fail(None, f"unknown top-level key(s) {sorted(unknown)}")

    name = r.get(data, "name", str, "name")
    if name != folder.name:
        raise r.fail("name", f"{name!r} must match the folder name {folder.name!r}")
    summary = r.get(data, "summary", str, "summary")
    category = r.get(data, "category", str, "category")
    if category not in CATEGORIES:
        raise r.fail("category", f"{category!r} unknown; one of {list(CATEGORIES)}")
    dtype_contract = r.get(data, "dtype_contract", str, "dtype_contract")
    description = r.get(data, "description", str, "description").strip()

    scalars = _scalars(r)
    int_names = {s.name for s in scalars if not SCALAR_TYPES[s.type].is_float}
    buffers = _buffers(r, int_names, {s.name for s in scalars})
    timing, validation = _sizes(r, scalars, settings)
    tolerance = _tolerance(r)
    roofline = _roofline(r, int_names)

    base = r.get(data, "baseline", dict, "baseline", {})
    src_name = r.get(base, "source", str, "baseline.source", "baseline.cu")
    plan_name = r.get(base, "plan", str, "baseline.plan", "baseline.json")
    try:
        baseline_source = _inside(r, folder, src_name, "baseline.source").read_text(encoding="utf-8")
    except OSError as exc:
        raise r.fail("baseline.source", f"cannot read {folder / src_name}: {exc.strerror}") from None
    plan_path = _inside(r, folder, plan_name, "baseline.plan")
    try:
        plan = parse_plan(json.loads(plan_path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise r.fail("baseline.plan", f"cannot read {plan_path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise TaskFileError(plan_path, None, f"not valid JSON: {exc}") from None
    except FormatError as exc:
        raise TaskFileError(plan_path, None, str(exc)) from None
    if not (folder / REFERENCE_FILE).is_file():
        raise TaskFileError(folder / REFERENCE_FILE, None, "missing (it defines generate() and reference())")

    return Task(
        name=name,
        summary=summary,
        category=category,
        dtype_contract=dtype_contract,
        description=description,
        scalars=scalars,
        buffers=buffers,
        timing=timing,
        validation=validation,
        tolerance=tolerance,
        roofline=roofline,
        baseline_source=baseline_source,
        baseline_plan=plan,
        folder=folder,
        fingerprint=_fingerprint(folder),
        pytorch_module=_pytorch(r, folder, buffers, scalars),
    )
