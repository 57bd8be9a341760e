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
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from cuda_llm.engine.task.dtypes import DTYPES, dtype_of_torch
from cuda_llm.engine.torchtask.child import end_tree
from cuda_llm.engine.torchtask.meta_layers import shapes_only
from cuda_llm.engine.torchtask.shapes import agrees, fit_shape, used_names
from cuda_llm.engine.torchtask.training import batch_statistics_layers, random_layer

_INT32_MAX = 2**31 - 1
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
# Forward runs this many times on the same inputs, each from another seed, to find a random reference.
RANDOM_CALLS = 4
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
    def __init__(self, path: Path, tuples: bool = True) -> None:
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
        self.tuples, self.elements = self._tuple_constants() if tuples else ({}, {})
        self.constants.update({e: self.tuples[t][i] for e, (t, i) in self.elements.items()})

    def _tuple_constants(self) -> tuple[dict[str, tuple[int, ...] | list[int]], dict[str, tuple[str, int]]]:
        """Sizes written as a tuple or list constant (`shape = (batch, dim)`): each element large
        enough to be a size becomes a constant of its own, NAME_I, so it is probed, fitted and
        varied like any other; run() puts the tuple back together from them."""
        tuples = {
            k: v
            for k, v in vars(self.module).items()
            if type(v) in (tuple, list) and v and all(type(e) is int for e in v) and not k.startswith("_")
        }
        taken = set(vars(self.module))
        elements: dict[str, tuple[str, int]] = {}
        for k, v in tuples.items():
            for i, e in enumerate(v):
                if e >= MIN_SIZE_VALUE:
                    elements[c_name(f"{k}_{i}", taken)] = (k, i)
        return {k: v for k, v in tuples.items() if any(t == k for t, _ in elements.values())}, elements

    def set_constants(self, values: dict[str, int]) -> None:
        """Set the module's constants, tuple elements rebuilt into their tuples."""
        rebuilt = {k: list(v) for k, v in self.tuples.items()}
        for k, v in values.items():
            if k in self.elements:
                t, i = self.elements[k]
                rebuilt[t][i] = v
            else:
                setattr(self.module, k, v)
        for k, parts in rebuilt.items():
            setattr(self.module, k, type(self.tuples[k])(parts))

    def tuple_parts(self, kept: set[str]) -> dict[str, list[str | int]]:
        """Each tuple constant as the runtime rebuilds it: an element that is a size or a fixed
        constant by its name, the others as the file's number."""
        parts: dict[str, list[str | int]] = {k: list(v) for k, v in self.tuples.items()}
        for e, (t, i) in self.elements.items():
            if e in kept:
                parts[t][i] = e
        return parts

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

        self.set_constants(values)
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
            if not isinstance(x, torch.Tensor) and not is_number(x):
                raise Refused(
                    f"get_inputs() item {i} is a {type(x).__name__}, not a tensor or a number: only tensors become "
                    "task buffers and numbers scalars (make it a module constant or a Model argument)"
                )
        random = random_layer(model)
        if random:
            raise Refused(f"forward is random: {random} in the file and import it again")
        model = model.to(device)
        if device == "meta":
            shapes_only(model)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
        if dtype is not None:
            model = model.to(dtype)
            inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        state = dict(model.named_parameters(remove_duplicate=False)) | dict(model.named_buffers(remove_duplicate=False))
        counter = FlopCounterMode(display=False)
        try:
            with torch.no_grad(), counter:
                out = model(*inputs)
        except Exception as exc:
            nbytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
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
            "inputs": [(_dtype(x, f"input {i}"), list(x.shape)) for i, x in enumerate(inputs) if not is_number(x)],
            "input_positions": [i for i, x in enumerate(inputs) if not is_number(x)],
            "params": [(k, _dtype(t, f"parameter {k}"), list(t.shape)) for k, t in state.items()],
            "outputs": [(_dtype(o, f"output {i}"), list(o.shape)) for i, o in enumerate(outs)],
            "flops": int(counter.get_total_flops()),
            "tuple": isinstance(out, list | tuple),
            "forward_args": list(inspect.signature(model.forward).parameters),
            "batch_statistics": batch_statistics_layers(model),
        }


def is_number(x: Any) -> bool:
    """A Python number among get_inputs(): a scalar argument of the task (bool is not one)."""
    return type(x) in (int, float)


def _numbers_at(mf: ModuleFile, values: dict[str, int], seed: int = 0) -> dict[int, int | float]:
    """The numbers get_inputs() returns at these constants, by position (on the meta device: no
    tensor memory is spent)."""
    import torch

    mf.set_constants(values)
    torch.manual_seed(seed)
    with torch.device("meta"):
        inputs = mf.module.get_inputs()
    return {i: x for i, x in enumerate(inputs) if is_number(x)}


def _number_inputs(
    mf: ModuleFile,
    base: dict[str, int],
    timing: dict[str, int],
    cases: list[dict[str, int]],
    args: list[str],
    taken: set[str],
) -> list[dict[str, Any]]:
    """Python numbers among get_inputs() as task scalars: a number the same at every size is a
    constant (int or float), an integer that follows the sizes is given per case like a size. One
    that changes between calls, or a float that changes with the sizes, cannot be passed honestly."""
    first = _numbers_at(mf, base)
    if not first:
        return []
    again = _numbers_at(mf, base, seed=1)
    per_case = [_numbers_at(mf, {**base, **c}) for c in cases]
    out = []
    for pos, value in first.items():
        label = f"get_inputs() item {pos} ({type(value).__name__} {value!r})"
        if again.get(pos) != value:
            raise Refused(
                f"{label} changes between two calls at the same sizes: a task's scalar must be repeatable; "
                "make it a constant or draw it from the sizes"
            )
        name = c_name(args[pos] if pos < len(args) else f"in{pos}", taken)
        values = [n.get(pos) for n in per_case]
        if all(v == value and type(v) is type(value) for v in values):
            ctype = "float64" if type(value) is float else ("int32" if abs(value) <= _INT32_MAX else "int64")
            out.append({"name": name, "position": pos, "type": ctype, "value": value})
            continue
        if type(value) is float or not all(type(v) is int and v >= 1 for v in [value, *values]):
            raise Refused(
                f"{label} changes with the sizes ({', '.join(map(repr, values))} at the smaller cases): a task "
                "passes a varying scalar only as a positive integer; make it a constant"
            )
        out.append({"name": name, "position": pos, "type": "size", "per_case": [*values, value]})
    mf.set_constants(timing)
    return out


def _forward_inputs(positions: list[int], tensors: list[dict[str, Any]], numbers: list[dict[str, Any]]) -> list[str]:
    """forward's arguments in order: the names of the task buffers and scalars they are."""
    by_pos = {p: t["name"] for p, t in zip(positions, tensors, strict=True)}
    by_pos.update({n["position"]: n["name"] for n in numbers})
    return [by_pos[p] for p in sorted(by_pos)]


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


def _refuse_empty(mf: ModuleFile, facts: dict[str, Any]) -> None:
    """A tensor of no elements at the file's sizes (`n = 0`) leaves nothing to compute or check."""
    labelled = [(f"input {i}", s) for i, (_, s) in enumerate(facts["inputs"])]
    labelled += [(f"parameter {k}", s) for k, _, s in facts["params"]]
    labelled += [(f"output {i}", s) for i, (_, s) in enumerate(facts["outputs"])]
    for what, shape in labelled:
        if 0 in shape:
            zeros = [k for k, v in vars(mf.module).items() if type(v) is int and v == 0 and not k.startswith("_")]
            where = f" ({', '.join(f'{k} = 0' for k in zeros)} in {mf.path.name})" if zeros else ""
            raise Refused(
                f"{what} of {mf.path.name} has no elements at the file's sizes (shape {shape}){where}: there is "
                "nothing to compute or check; give the sizes positive values"
            )


def _same(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)))


def _refuse_random(mf: ModuleFile, values: dict[str, int]) -> None:
    """The reference must be repeatable: forward twice on the same inputs gives the same outputs, or
    a correct kernel would be judged against one random draw. Checked in float64 on the CPU."""
    import torch

    mf.set_constants(values)
    torch.manual_seed(0)
    try:
        init = mf.module.get_init_inputs() if callable(getattr(mf.module, "get_init_inputs", None)) else []
        model = mf.module.Model(*init).to(torch.float64)
        inputs = [
            x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in mf.module.get_inputs()
        ]

        def call(seed: int) -> list[Any]:
            torch.manual_seed(seed)
            args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]  # forward may write them
            with torch.no_grad():
                out = model(*args)
            return list(out) if isinstance(out, list | tuple) else [out]

        # Each call from another seed: at a tiny size two random draws can agree by chance (a dropout
        # mask of 5 elements does once in 32), RANDOM_CALLS of them hardly ever.
        runs = [call(seed) for seed in range(RANDOM_CALLS)]
    except Exception:
        return  # the runs before this one raise what there is to say about a forward that fails
    first = runs[0]
    for i, a in enumerate(first):
        if all(_same(a, run[i]) for run in runs[1:]):
            continue
        which = f"output {i}" if len(first) > 1 else "its output"
        dropout = [
            f"{name} (p={m.p})"
            for name, m in model.named_modules()
            if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training and m.p > 0
        ]
        if dropout:
            cause = f"the dropout layer {', '.join(dropout)} is active (the module runs in training mode)"
            fix = "set its p to 0.0 in the file"
        else:
            cause = "forward draws random numbers (torch.randn_like, torch.rand, F.dropout...)"
            fix = "make forward deterministic (random values can come in as an input from get_inputs())"
        raise Refused(
            f"{mf.path.name}: forward gives different results on the same inputs ({which} differs between two calls): "
            f"{cause}; a task needs a repeatable reference: {fix}"
        )


def probe_file(path: Path) -> dict[str, Any]:
    """probe(), with sizes in tuple constants varied where the module still computes at the smaller
    sizes; else as written. A tuple may repeat another constant (`input_shape = (num_classes,)`
    beside targets drawn below num_classes): varied alone, the real run fails, and it stays fixed."""
    try:
        return probe(path)
    except Refused:
        if not ModuleFile(path).elements:
            raise
    return probe(path, tuples=False)


def probe(path: Path, tuples: bool = True) -> dict[str, Any]:
    mf = ModuleFile(path, tuples)
    base_values = dict(mf.constants)
    base = mf.run(base_values, "meta")
    _refuse_empty(mf, base)
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
    fixed = {c: v for c, v in base_values.items() if c not in sizes and c not in mf.elements}
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
        _refuse_random(mf, {**base_values, **smallest})
    taken = set(base_values)
    args = [a for a in base["forward_args"] if a not in ("args", "kwargs")]
    inputs = []
    numbers = _number_inputs(mf, base_values, timing, cases, args, taken | set(vars(mf.module)))
    for i, (dtype, _shape) in enumerate(base["inputs"]):
        pos = base["input_positions"][i]
        name = c_name(args[pos] if pos < len(args) else f"in{pos}", taken)
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
        "tuples": mf.tuple_parts(set(timing)),
        "numbers": numbers,
        "forward_inputs": _forward_inputs(base["input_positions"], inputs, numbers),
        "batch_statistics": base["batch_statistics"],
        "gpu_free_bytes": _gpu_free_bytes(),
    }


def _gpu_free_bytes() -> int | None:
    import torch

    try:
        return int(torch.cuda.mem_get_info()[0]) if torch.cuda.is_available() else None
    except Exception:  # a driver that answers is_available() but not the query: no figure
        return None


def _out_of_memory(path: Path, exc: BaseException) -> str | None:
    """The line for a failure caused by the child's memory cap (child.py), wherever it surfaced."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryError) or "can't allocate memory" in str(seen):
            import resource

            cap = resource.getrlimit(resource.RLIMIT_DATA)[0]
            limit = f"{cap / 2**30:.0f} GiB" if cap != resource.RLIM_INFINITY else "the memory"
            return (
                f"{path.name} needed more than {limit} of memory while loading (the importer's limit): "
                "make what importing it, Model(...) or get_inputs() allocate smaller"
            )
        seen = seen.__cause__ or seen.__context__
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0])
    try:
        result: dict[str, Any] = probe_file(path)
    except Refused as exc:
        result = {"error": _out_of_memory(path, exc) or str(exc)}
    except Exception as exc:  # the user's code failed somewhere we did not foresee: still one line
        traceback.print_exc(file=sys.stderr)
        result = {"error": _out_of_memory(path, exc) or f"{path.name}: {type(exc).__name__}: {exc}"}
    text = json.dumps(result)
    if len(argv) > 1:
        Path(argv[1]).write_text(text, encoding="utf-8")
    else:
        print(text)
    # This process is the subreaper of what the module started (child.py): nothing it forked
    # outlives the import.
    end_tree(os.getpid(), include_root=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
