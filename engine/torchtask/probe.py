"""The child process of `tasks import`: runs the user's module file and prints what it found.

    python -m cuda_llm.engine.torchtask.probe FILE.py

prints one JSON object on its last line of stdout: the facts writer.py needs, or {"error": LINE}.
The module runs on PyTorch's meta device (shapes without memory: a module of several GB at its own
sizes costs nothing here), at the file's constants, at each size constant + 1 (to express shapes
in the constants) and at smaller sizes (the validation cases, kept only where the fitted shapes
hold). One real run in float64 on the CPU at the smallest case proves the reference computes.
"""

from __future__ import annotations

import inspect
import json
import keyword
import sys
import traceback
from pathlib import Path
from typing import Any

from cuda_llm.engine.task.dtypes import DTYPES, dtype_of_torch
from cuda_llm.engine.torchtask.meta_layers import shapes_only
from cuda_llm.engine.torchtask.shapes import agrees, fit_shape, used_names
from cuda_llm.engine.torchtask.training import batch_statistics_layers, random_layer

# Integer constants below this are kernel sizes, strides, axes or counts of heads, not sizes a
# user scales: changing them changes what the module computes, so they stay at the file's value.
MIN_SIZE_VALUE = 8
# Smaller sizes tried for validation: every size constant mapped by one rule. Odd, non-power-of-two
# values where the file's value allows (a kernel must not assume a multiple of its tile).
SMALL_RULES = (
    ("tiny", lambda v: min(v, 5)),
    ("odd", lambda v: min(v, 13)),
    ("third", lambda v: max(1, v // 3) | 1),
)
# Real values are computed at the smallest validation case; past this many elements the check
# would cost more than it proves.
REAL_RUN_MAX_ELEMENTS = 1 << 22
# A forward the meta device cannot run (data-dependent ops such as .item()) runs on the CPU instead,
# with real values, while its inputs stay this small; a larger one is refused with the meta error.
CPU_FALLBACK_MAX_BYTES = 1 << 30
_C_KEYWORDS = frozenset(
    [
        "auto",
        "bool",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "int",
        "long",
        "register",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "half",
    ]
)


class Refused(Exception):
    """One line for the user: the module cannot become a task as it is."""


def c_name(text: str, taken: set[str]) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text) or "t"
    if name[0].isdigit():
        name = "p" + name
    if name in _C_KEYWORDS or keyword.iskeyword(name) or name.startswith("__"):
        name += "_t"
    base, i = name, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def _dtype(t: Any, what: str) -> str:
    d = dtype_of_torch(str(t.dtype))
    if d is None:
        can = ", ".join(d.name for d in DTYPES.values() if d.torch is not None)
        raise Refused(f"{what} is {str(t.dtype).removeprefix('torch.')}; task buffers can be {can}")
    return d.name


def missing_package(path: Path, exc: ModuleNotFoundError) -> str:
    top = (exc.name or "").split(".")[0]
    if not top:
        return f"{path.name} fails to import: ModuleNotFoundError: {exc}"
    return (
        f"{path.name} fails to import: it needs the Python package {top!r}, which is not installed where "
        f"cuda-llm runs; install it (pip install {top}) and import the file again"
    )


class ModuleFile:
    def __init__(self, path: Path) -> None:
        import importlib.util

        self.path = path
        spec = importlib.util.spec_from_file_location("cuda_llm_imported_module", path)
        if spec is None or spec.loader is None:
            raise Refused(f"{path} cannot be imported as Python")
        self.module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(self.module)
        except ModuleNotFoundError as exc:
            raise Refused(missing_package(path, exc)) from None
        except (Exception, SystemExit) as exc:  # an exit while loading is the file's fault too
            raise Refused(f"{path.name} fails to import: {type(exc).__name__}: {exc}") from None
        import torch

        model = getattr(self.module, "Model", None)
        if not (isinstance(model, type) and issubclass(model, torch.nn.Module)):
            raise Refused(f"{path.name} defines no Model class (an nn.Module subclass); the format needs one")
        if not callable(getattr(self.module, "get_inputs", None)):
            raise Refused(f"{path.name} defines no get_inputs(); the format needs one returning forward's inputs")
        self.build_on_cpu = False  # set once the constructor failed on the meta device
        self.constants = {
            k: v
            for k, v in vars(self.module).items()
            if type(v) is int and not k.startswith("_") and v >= MIN_SIZE_VALUE
        }

    def _build(self, init: list[Any], device: str) -> Any:
        """Model(*init) on `device`; a constructor that reads values (`.item()`, a Python number of
        a tensor) cannot run on the meta device: it is built on the CPU and moved there."""
        import torch

        if device == "meta" and not self.build_on_cpu:
            try:
                return self.module.Model(*init)
            except Exception:
                self.build_on_cpu = True
        try:
            with torch.device("cpu" if device == "meta" else device):
                return self.module.Model(*init)
        except Exception as exc:
            raise Refused(f"Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from None

    def run(self, values: dict[str, int], device: str, dtype: Any = None, fallback: bool = False) -> dict[str, Any]:
        """Run the module with these constants; return its tensors' facts (and the tensors).
        `fallback`: a CPU run standing in for a meta run that failed on a value-dependent op."""
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        for k, v in values.items():
            setattr(self.module, k, v)
        torch.manual_seed(0)
        with torch.device(device):
            try:
                init = self.module.get_init_inputs() if callable(getattr(self.module, "get_init_inputs", None)) else []
            except Exception as exc:
                raise Refused(f"get_init_inputs() raised {type(exc).__name__}: {exc}") from None
            try:
                inputs = self.module.get_inputs()
            except Exception as exc:
                raise Refused(f"get_inputs() raised {type(exc).__name__}: {exc}") from None
            model = self._build(init, device)
        if not isinstance(inputs, list | tuple):
            raise Refused(f"get_inputs() returns a {type(inputs).__name__}, not a list of tensors")
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise Refused(
                    f"get_inputs() item {i} is a {type(x).__name__}, not a tensor: only tensors become task "
                    "buffers (make it a module constant or a Model argument)"
                )
        random = random_layer(model)
        if random:
            raise Refused(f"forward is random: {random} in the file and import it again")
        model = model.to(device)
        if device == "meta":
            shapes_only(model)
        inputs = [x.to(device) for x in inputs]
        if dtype is not None:
            model = model.to(dtype)
            inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
        state = dict(model.named_parameters(remove_duplicate=False)) | dict(model.named_buffers(remove_duplicate=False))
        counter = FlopCounterMode(display=False)
        try:
            with torch.no_grad(), counter:
                out = model(*inputs)
        except Exception as exc:
            nbytes = sum(x.numel() * x.element_size() for x in inputs)
            if device == "meta" and nbytes <= CPU_FALLBACK_MAX_BYTES:
                return self.run(values, "cpu", dtype, fallback=True)  # an op meta cannot run (.item(), ...)
            raise Refused(f"forward raised {type(exc).__name__}: {exc}") from None
        outs = list(out) if isinstance(out, list | tuple) else [out]
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                what = type(out).__name__ if o is out else f"a {type(out).__name__} holding a {type(o).__name__}"
                raise Refused(f"forward returns {what} (item {i}), not a tensor or a tuple of tensors")
        if fallback:
            _same_shapes_for_other_values(model, inputs, outs)
        return {
            "inputs": [(_dtype(x, f"input {i}"), list(x.shape)) for i, x in enumerate(inputs)],
            "params": [(k, _dtype(t, f"parameter {k}"), list(t.shape)) for k, t in state.items()],
            "outputs": [(_dtype(o, f"output {i}"), list(o.shape)) for i, o in enumerate(outs)],
            "flops": int(counter.get_total_flops()),
            "tuple": isinstance(out, list | tuple),
            "forward_args": list(inspect.signature(model.forward).parameters),
            "batch_statistics": batch_statistics_layers(model),
        }


def _same_shapes_for_other_values(model: Any, inputs: list[Any], outs: list[Any]) -> None:
    """Refuse a forward whose results' shapes depend on the inputs' values (nonzero, masked_select,
    unique): a task's outputs have shapes of the sizes alone. Checked with other values of the
    same shapes, where the meta device could not tell (it stops at such ops)."""
    import torch

    gen = torch.Generator().manual_seed(1)
    other = [
        torch.rand(x.shape, generator=gen, dtype=x.dtype) * 2 - 1
        if x.is_floating_point()
        else torch.randint(0, 2, x.shape, generator=gen, dtype=x.dtype)
        if x.dtype != torch.bool
        else torch.rand(x.shape, generator=gen) < 0.5
        for x in inputs
    ]
    try:
        with torch.no_grad():
            again = model(*other)
    except Exception:
        return  # other values the module does not accept (indices, say): nothing learnt
    again_outs = list(again) if isinstance(again, list | tuple) else [again]
    before = [tuple(o.shape) for o in outs]
    after = [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in again_outs]
    if before != after:
        raise Refused(
            f"the shape of forward's result depends on the input values ({before} with get_inputs()'s, {after} "
            "with others of the same shapes); a task's outputs have shapes set by the sizes alone: make forward "
            "return a fixed shape (a mask or padding instead of selecting elements)"
        )


def _shapes(facts: dict[str, Any]) -> list[list[int]]:
    return [s for _, s in facts["inputs"]] + [s for _, _, s in facts["params"]] + [s for _, s in facts["outputs"]]


def _elements(facts: dict[str, Any]) -> int:
    total = 0
    for shape in _shapes(facts):
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def probe(path: Path) -> dict[str, Any]:
    mf = ModuleFile(path)
    base_values = dict(mf.constants)
    base = mf.run(base_values, "meta")
    base_shapes = _shapes(base)
    # Which constants move which dimensions: each raised by one in turn.
    plus: dict[str, dict[str, Any]] = {}
    for c, v in base_values.items():
        try:
            facts = mf.run({**base_values, c: v + 1}, "meta")
        except Refused:
            continue  # a constant the module cannot change (a divisor, a count that must match)
        shapes = _shapes(facts)
        if len(shapes) == len(base_shapes) and all(len(a) == len(b) for a, b in zip(shapes, base_shapes, strict=True)):
            plus[c] = facts
    fits = [
        fit_shape(base_values, shape, {c: _shapes(plus[c])[i] for c in plus}) for i, shape in enumerate(base_shapes)
    ]
    used = used_names(fits)
    sizes = [c for c in base_values if c in used]  # the file's order
    flops_fit = fit_shape(base_values, [base["flops"]], {c: [plus[c]["flops"]] for c in plus})[0]
    if used_names([[flops_fit]]) - set(sizes):
        flops_fit = "0"  # the count moves with a constant no shape shows: not an expression of the sizes
    timing = {c: base_values[c] for c in sizes}
    fixed = {c: v for c, v in base_values.items() if c not in sizes}
    cases: list[dict[str, int]] = []
    case_facts: list[dict[str, Any]] = []
    for _label, rule in SMALL_RULES:
        point = {c: rule(v) for c, v in timing.items()}
        if point == timing or point in cases:
            continue
        try:
            facts = mf.run({**base_values, **point}, "meta")
        except Refused:
            continue
        shapes = _shapes(facts)
        if len(shapes) == len(fits) and all(agrees(f, point, s) for f, s in zip(fits, shapes, strict=True)):
            if flops_fit != "0" and not agrees([flops_fit], point, [facts["flops"]]):
                flops_fit = "0"
            cases.append(point)
            case_facts.append(facts)
    # The reference must compute real values: float64 on the CPU at the smallest case.
    smallest, smallest_facts = (cases[0], case_facts[0]) if cases else (timing, base)
    import torch

    if _elements(smallest_facts) <= REAL_RUN_MAX_ELEMENTS:
        mf.run({**base_values, **smallest}, "cpu", torch.float64)
    taken = set(base_values)
    args = [a for a in base["forward_args"] if a not in ("args", "kwargs")]
    inputs = []
    for i, (dtype, _shape) in enumerate(base["inputs"]):
        name = c_name(args[i] if i < len(args) else f"in{i}", taken)
        inputs.append({"name": name, "dtype": dtype, "shape": list(fits[i])})
    k = len(inputs)
    params = []
    for j, (path_, dtype, _shape) in enumerate(base["params"]):
        params.append(
            {"name": c_name(path_.replace(".", "_"), taken), "path": path_, "dtype": dtype, "shape": list(fits[k + j])}
        )
    k += len(params)
    outputs = []
    for j, (dtype, _shape) in enumerate(base["outputs"]):
        label = f"out{j}" if base["tuple"] else "out"
        outputs.append({"name": c_name(label, taken), "dtype": dtype, "shape": list(fits[k + j])})
    return {
        "sizes": timing,
        "fixed": fixed,
        "validation": cases,
        "inputs": inputs,
        "params": params,
        "outputs": outputs,
        "returns_tuple": base["tuple"],
        "flops": flops_fit,
        "batch_statistics": base["batch_statistics"],
        "gpu_free_bytes": _gpu_free_bytes(),
    }


def _gpu_free_bytes() -> int | None:
    import torch

    try:
        return int(torch.cuda.mem_get_info()[0]) if torch.cuda.is_available() else None
    except Exception:  # a driver that answers is_available() but not the query: no figure
        return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0])
    try:
        result: dict[str, Any] = probe(path)
    except Refused as exc:
        result = {"error": str(exc)}
    except Exception as exc:  # the user's code failed somewhere we did not foresee: still one line
        traceback.print_exc(file=sys.stderr)
        result = {"error": f"{path.name}: {type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
