"""Bind a launch plan to a task and to the kernels' signatures: the last check before a GPU.

Every argument is resolved to what the harness will pass (a task buffer, a scratch buffer, a task
scalar or an integer expression) and matched against the parameter that receives it, so that a
float buffer never lands in an `int*`, an int32 size never in a `size_t`, and an output never in
a `const float*`. Concrete sizes are not known here: the limits of a GPU (threads per block, grid
size, shared memory, scratch) are checked at every validation and timing size by
engine/contract/limits.py; this module rejects what is wrong for every size. All problems found
are reported together, so one repair can fix them all.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from cuda_llm.engine.contract.limits import INT_RANGES
from cuda_llm.engine.contract.signature import KernelParam, KernelScan, KernelSignature
from cuda_llm.engine.core.errors import ExpressionError, FormatError
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES, SCALAR_TYPES, ScalarType, scalar_type_of_c
from cuda_llm.engine.task.plan import (
    ArgKind,
    BoundArg,
    BoundLaunch,
    BoundPlan,
    Launch,
    LaunchPlan,
    ParamType,
    PlanArg,
)

if TYPE_CHECKING:  # engine.task imports engine.contract.plan: a runtime import would be a cycle
    from cuda_llm.engine.task.model import Task

# Problems listed in one message: enough to fix several at once, few enough for a prompt.
MAX_PROBLEMS = 8
# A device pointer's size: what a pointer parameter takes in the PTX parameter space.
POINTER_BYTES = 8
# Every element type some buffer may be viewed as; anything else behind a `*` is unknown.
_POINTER_TYPES = frozenset().union(*(d.pointer_types for d in DTYPES.values()))
# Scalar types the harness cannot pass: named so the message can say what to use instead.
_NARROW_SCALARS = frozenset(
    {
        "short",
        "unsigned short",
        "char",
        "signed char",
        "unsigned char",
        "bool",
        "__half",
        "half",
        "__nv_bfloat16",
        "long double",
        "int16_t",
        "uint16_t",
        "int8_t",
        "uint8_t",
    }
)
_TYPES_RULE = (
    "spell parameter types out with built-in types: T* or const T* for buffers (T such as float, "
    "float4, __half, __nv_bfloat16, int, double), int/unsigned int/long long/size_t for integers, float or "
    "double for floating-point scalars; no macros, typedefs, structs or references"
)


@dataclass(frozen=True)
class _Resolved:
    """One argument after resolution, before its BoundArg is built."""

    name: str
    param: KernelParam
    role: str  # input | output | scratch | value


def _quote(text: str) -> str:
    return json.dumps(text)


def _param_text(param: KernelParam) -> str:
    return f"the parameter `{param.raw}`"


def _suggest(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1)
    return f" (did you mean {_quote(close[0])}?)" if close else ""


class _Binder:
    def __init__(
        self, plan: LaunchPlan, task: Task, kernels: KernelScan, ptx_params: dict[str, tuple[int, ...]] | None
    ) -> None:
        self.plan = plan
        self.task = task
        self.kernels = kernels
        self.ptx_params = ptx_params
        self.buffers = {b.name: b for b in task.buffers}
        self.scalars = {s.name: s for s in task.scalars}
        self.int_names = sorted(s.name for s in task.scalars if not SCALAR_TYPES[s.type].is_float)
        self.scratch = {s.name: s for s in plan.scratch}
        self.problems: list[str] = []

    def fail(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)

    # --- names -------------------------------------------------------------------------------

    def _what_is(self, name: str) -> str:
        if name in self.buffers:
            return f"{_quote(name)} is a buffer"
        if name in self.scratch:
            return f"{_quote(name)} is a scratch buffer"
        if name in self.scalars:
            return f"{_quote(name)} is a floating-point scalar"
        return f"{_quote(name)} is not a name of this task" + _suggest(name, self.int_names)

    def int_expr(self, text: str, where: str, minimum: int | None) -> int | None:
        """Check an integer expression of the task's sizes; return its value when it has no
        names (a literal), so that literal nonsense is caught before any run."""
        try:
            unknown = sorted(expr.names(text) - set(self.int_names))
        except ExpressionError as exc:  # parse_plan vetted the syntax; this is belt and braces
            self.fail(f"{where}: {exc}")
            return None
        if unknown:
            described = "; ".join(self._what_is(n) for n in unknown)
            self.fail(
                f"{where} {_quote(text)}: {described}. Integer expressions may use numbers, "
                f"+ - * // %, min, max, cdiv and the task's integer scalars: "
                f"{', '.join(self.int_names)}."
            )
            return None
        if expr.names(text):
            return None
        try:
            value = expr.evaluate(text, {})
        except ExpressionError as exc:
            self.fail(f"{where}: {exc}")
            return None
        if minimum is not None and value < minimum:
            self.fail(f"{where} is {value}: it must be at least {minimum}.")
        return value

    # --- scratch -----------------------------------------------------------------------------

    def check_scratch(self) -> None:
        for i, s in enumerate(self.plan.scratch):
            where = f"scratch[{i}] {_quote(s.name)}"
            if s.name in self.buffers:
                self.fail(
                    f"{where}: the task already has a buffer named {_quote(s.name)}; give "
                    "the scratch buffer another name."
                )
            elif s.name in self.scalars:
                self.fail(
                    f"{where}: the task already has a scalar named {_quote(s.name)}; give "
                    "the scratch buffer another name."
                )
            self.int_expr(s.count, f"{where}: count", minimum=1)

    # --- kernels -----------------------------------------------------------------------------

    def kernel(self, launch: Launch, where: str) -> KernelSignature | None:
        name = launch.kernel
        sig = self.kernels.get(name)
        if sig is not None:
            if not sig.defined:
                self.fail(
                    f"{where}: kernel {_quote(name)} is declared on line {sig.line} but never defined: give it a body."
                )
                return None
            return sig
        k = self.kernels
        if name in k.not_extern_c:
            self.fail(
                f'{where}: kernel {_quote(name)} is not declared extern "C" (C++ name mangling '
                f'hides it): write extern "C" __global__ void {name}(...).'
            )
            return None
        if name in k.templates:
            self.fail(
                f"{where}: kernel {_quote(name)} is a template, and a template cannot be "
                'extern "C": write a plain extern "C" __global__ kernel (fix template '
                "parameters as constexpr constants or #define values)."
            )
            return None
        if k.names:
            message = (
                f"{where}: unknown kernel {_quote(name)}{_suggest(name, list(k.names))}; "
                f'the extern "C" __global__ kernels in the code are: '
                f"{', '.join(k.names)}."
            )
        else:
            message = f'{where}: unknown kernel {_quote(name)}: the code defines no extern "C" __global__ kernel.'
        if k.not_extern_c:
            message += (
                f' Not extern "C" (their names are mangled, so they cannot be launched): {", ".join(k.not_extern_c)}.'
            )
        if k.templates:
            message += f' Templates (cannot be extern "C"): {", ".join(k.templates)}.'
        if k.macros:
            message += (
                f" __global__ appears inside #define {', '.join(k.macros)}: kernel signatures "
                'are read from the source, so write extern "C" __global__ void name(...) out '
                "in full instead of through a macro."
            )
        self.fail(message)
        return None

    # --- arguments ---------------------------------------------------------------------------

    def unknown_param_type(self, param: KernelParam, where: str) -> None:
        text = _param_text(param)
        if param.pointer_depth > 1:
            self.fail(f"{where}: {text} is a pointer to a pointer; buffers pass as T* or const T*.")
        elif param.pointer_depth == 1:
            self.fail(
                f"{where}: {text} points to {_quote(param.c_type)}, which the harness cannot check: {_TYPES_RULE}."
            )
        elif "&" in param.c_type:
            self.fail(
                f"{where}: {text} is a reference, which a kernel cannot receive from the "
                "host: pass buffers as pointers and scalars by value."
            )
        elif param.c_type in _NARROW_SCALARS:
            self.fail(
                f"{where}: {text} has type {param.c_type}, which the harness does not "
                "pass: integers pass as int or unsigned int (4 bytes) or long long, "
                "int64_t or size_t (8 bytes); floating-point scalars as float or double."
            )
        else:
            self.fail(f"{where}: {text} has type {_quote(param.c_type)}, which the harness cannot pass: {_TYPES_RULE}.")

    def bind_buffer(self, name: str, kind: str, param: KernelParam, where: str) -> bool:
        role: str
        if kind == "buffer":
            dtype = self.buffers[name].dtype
            role = self.buffers[name].role
        else:
            dtype, role = self.scratch[name].dtype, "scratch"
        what = f"the {role} buffer {_quote(name)} ({dtype})"
        const = "const " if role == "input" else ""
        c_type = DTYPES[dtype].c_type
        suggestion = f"`{const}{c_type}* {param.name or name}`"
        if param.pointer_depth == 0:
            if param.c_type in _POINTER_TYPES or scalar_type_of_c(param.c_type):
                self.fail(
                    f"{where}: {what} goes to {_param_text(param)}, which is not a pointer: declare it {suggestion}."
                )
            else:
                self.unknown_param_type(param, where)
            return False
        if param.pointer_depth > 1 or param.c_type not in _POINTER_TYPES:
            self.unknown_param_type(param, where)
            return False
        allowed = DTYPES[dtype].pointer_types
        if param.c_type not in allowed:
            others = ", ".join(sorted(allowed - {c_type}))
            self.fail(
                f"{where}: {what} goes to {_param_text(param)}, which points to "
                f"{param.c_type}: declare it {suggestion} (a {dtype} buffer may also be "
                f"viewed as: {others})."
            )
            return False
        return True

    def bind_scalar(self, name: str, param: KernelParam, where: str) -> ParamType | None:
        scalar = self.scalars[name]
        st = SCALAR_TYPES[scalar.type]
        what = f"the scalar {_quote(name)} ({scalar.type})"
        pt = self.value_param(param, where, what)
        if pt is None:
            return None
        c_type = "float" if scalar.type == "float32" else "double"
        if st.is_float and not pt.is_float:
            self.fail(
                f"{where}: {what} goes to {_param_text(param)}, an integer: declare it `{c_type} {param.name or name}`."
            )
        elif st.is_float and pt.size != st.size:
            self.fail(
                f"{where}: {what} is {st.size} bytes but {_param_text(param)} is "
                f"{pt.size}: declare it `{c_type} {param.name or name}`."
            )
        elif not st.is_float and pt.is_float:
            self.fail(
                f"{where}: {what} is an integer but {_param_text(param)} is "
                f"floating-point: declare it `{_int_c(st.size)} {param.name or name}`."
            )
        elif not st.is_float and pt.size != st.size:
            if st.size == 4:
                self.fail(
                    f"{where}: {what} passes as 4 bytes but {_param_text(param)} takes "
                    f'8: write {{"expr": {_quote(name)}, "type": "int64"}} or '
                    f"declare it `int {param.name or name}`."
                )
            else:
                self.fail(
                    f"{where}: {what} is 8 bytes but {_param_text(param)} takes 4: "
                    f"declare it `long long {param.name or name}` (or int64_t)."
                )
        else:
            return pt.name  # type: ignore[return-value]  # a ParamType literal by construction
        return None

    def bind_expr(self, arg: PlanArg, param: KernelParam, where: str) -> ParamType | None:
        width = 8 if arg.int_type == "int64" else 4
        what = f"the integer expression {_quote(arg.text)} ({arg.int_type or 'int32'})"
        names = expr.names(arg.text)
        if len(names) == 1 and arg.text.strip() in names and arg.text.strip() not in self.scalars:
            # A bare unknown name: most likely a misspelt buffer, scratch or scalar.
            name = arg.text.strip()
            if arg.int_type and (name in self.buffers or name in self.scratch):
                self.fail(
                    f"{where}: {_quote(name)} is a buffer, and only integer expressions "
                    f'take a "type": write {_quote(name)}.'
                )
                return None
            every = [*self.buffers, *self.scratch, *self.scalars]
            self.fail(
                f"{where}: unknown name {_quote(name)}{_suggest(name, every)}. An argument names "
                f"a task buffer ({', '.join(self.buffers)}), a scratch buffer "
                f"({', '.join(self.scratch) or 'none declared'}), a task scalar "
                f"({', '.join(self.scalars)}), or is an integer expression of "
                f"{', '.join(self.int_names)}."
            )
            return None
        if names - set(self.int_names):
            self.int_expr(arg.text, where, minimum=None)
            return None
        pt = self.value_param(param, where, what)
        if pt is None:
            return None
        if pt.is_float:
            self.fail(
                f"{where}: {what} goes to {_param_text(param)}, which is floating-point: "
                "integer expressions pass as int or long long; declare the parameter as "
                "one of those, or pass a floating-point scalar by name."
            )
            return None
        if pt.size != width:
            if width == 4:
                self.fail(
                    f"{where}: {what} passes as 4 bytes but {_param_text(param)} takes "
                    f'8: write {{"expr": {_quote(arg.text)}, "type": "int64"}}.'
                )
            else:
                self.fail(
                    f"{where}: {what} passes as 8 bytes but {_param_text(param)} takes "
                    '4: drop "type": "int64", or declare the parameter long long.'
                )
            return None
        value = self.int_expr(arg.text, where, minimum=None)
        low, high = INT_RANGES[pt.name]
        if value is not None and not low <= value <= high:
            self.fail(f"{where}: {value} does not fit {_param_text(param)} ({pt.name}).")
            return None
        return pt.name  # type: ignore[return-value]  # a ParamType literal by construction

    def value_param(self, param: KernelParam, where: str, what: str) -> ScalarType | None:
        """The scalar type a by-value parameter receives, or None after reporting why not."""
        if param.pointer_depth:
            self.fail(
                f"{where}: {what} goes to {_param_text(param)}, a pointer; pointers receive "
                f"task buffers ({', '.join(self.buffers)}) or scratch buffers "
                f"({', '.join(self.scratch) or 'none declared'})."
            )
            return None
        pt = scalar_type_of_c(param.c_type)
        if pt is None:
            self.unknown_param_type(param, where)
        return pt

    def bind_arg(self, arg: PlanArg, param: KernelParam, where: str) -> tuple[BoundArg, _Resolved] | None:
        name = arg.text.strip()
        if arg.int_type is None and (name in self.buffers or name in self.scratch):
            kind: ArgKind = "buffer" if name in self.buffers else "scratch"
            if not self.bind_buffer(name, kind, param, where):
                return None
            role = self.buffers[name].role if kind == "buffer" else "scratch"
            return BoundArg(kind, name, "ptr"), _Resolved(name, param, role)
        if arg.int_type is None and name in self.scalars:
            ptype = self.bind_scalar(name, param, where)
            if ptype is None:
                return None
            return BoundArg("scalar", name, ptype), _Resolved(name, param, "value")
        ptype = self.bind_expr(arg, param, where)
        if ptype is None:
            return None
        return BoundArg("expr", arg.text, ptype), _Resolved(arg.text, param, "value")

    # --- launches ----------------------------------------------------------------------------

    def check_const(self, resolved: list[_Resolved], writable: set[str], at: str) -> None:
        """An output or scratch buffer must reach some kernel through a non-const pointer no
        later than the first launch that reads it through a const one: otherwise nothing could
        write it. (A later launch may read, as const, what an earlier one wrote.)"""
        for r in resolved:
            if r.role in ("output", "scratch") and not r.param.is_const_pointee:
                writable.add(r.name)
        for r in resolved:
            if r.role in ("output", "scratch") and r.param.is_const_pointee and r.name not in writable:
                self.fail(
                    f"{at}: the {r.role} buffer {_quote(r.name)} goes to "
                    f"{_param_text(r.param)}, but no launch so far receives it through a "
                    "non-const pointer, so nothing could write it: drop the const."
                )
                writable.add(r.name)  # once reported, later const reads follow from this fix

    def check_outputs_reached(self, writable: set[str]) -> None:
        """The harness writes no output itself: one no kernel can write stays unwritten."""
        for b in self.task.outputs:
            if b.name not in writable:
                self.fail(
                    f"the output buffer {_quote(b.name)} is not passed to any launch: give it to "
                    f"a kernel through a non-const pointer ({DTYPES[b.dtype].c_type}* "
                    f"{b.name}) that writes it."
                )

    def check_ptx(self, sig: KernelSignature, at: str) -> None:
        assert self.ptx_params is not None
        sizes = self.ptx_params.get(sig.name)
        if sizes is None:
            compiled = ", ".join(sorted(self.ptx_params)) or "none"
            self.fail(
                f"{at}: kernel {_quote(sig.name)} is not in the compiled code (compiled "
                f"kernels: {compiled}): is it inside an #if or #ifdef that is false, or "
                "is its name made by a macro?"
            )
            return
        if len(sizes) != len(sig.params):
            self.fail(
                f"{at}: the compiled kernel {_quote(sig.name)} takes {len(sizes)} "
                f"parameters, but its source reads as {sig.describe()} "
                f"({len(sig.params)}): write the signature out without macros."
            )
            return
        for param, size in zip(sig.params, sizes, strict=True):
            if param.pointer_depth:
                expected = POINTER_BYTES
            else:
                st = scalar_type_of_c(param.c_type)
                if st is None:
                    continue  # already reported as a type the harness cannot pass
                expected = st.size
            if size != expected:
                self.fail(
                    f"{at}: {_param_text(param)} is {size} bytes in the compiled code but "
                    f"{expected} as written: do not change types with macros or "
                    "typedefs."
                )

    def bind_launch(self, i: int, launch: Launch, writable: set[str]) -> BoundLaunch | None:
        at = f"launches[{i}] (kernel {_quote(launch.kernel)})"
        grid = cast(tuple[str, str, str], (*launch.grid, "1", "1")[:3])
        block = cast(tuple[str, str, str], (*launch.block, "1", "1")[:3])
        for field, dims in (("grid", launch.grid), ("block", launch.block)):
            for k, d in enumerate(dims):
                self.int_expr(d, f"launches[{i}].{field}[{k}]", minimum=1)
        self.int_expr(launch.shared_bytes, f"launches[{i}].shared_bytes", minimum=0)
        sig = self.kernel(launch, at)
        if sig is None:
            return None
        if len(launch.args) != len(sig.params):
            self.fail(
                f"{at}: {len(launch.args)} argument(s) for {len(sig.params)} "
                f"parameter(s); the signature is {sig.describe()}."
            )
            return None
        before = len(self.problems)
        args: list[BoundArg] = []
        resolved: list[_Resolved] = []
        for k, (arg, param) in enumerate(zip(launch.args, sig.params, strict=True)):
            bound = self.bind_arg(arg, param, f"launches[{i}].args[{k}] {_quote(arg.text)}")
            if bound is not None:
                args.append(bound[0])
                resolved.append(bound[1])
        self.check_const(resolved, writable, at)
        if self.ptx_params is not None:
            self.check_ptx(sig, at)
        if len(self.problems) != before:
            return None
        return BoundLaunch(launch.kernel, grid, block, launch.shared_bytes, tuple(args))

    def bind(self) -> BoundPlan:
        self.check_scratch()
        writable: set[str] = set()
        launches = [self.bind_launch(i, la, writable) for i, la in enumerate(self.plan.launches)]
        if not self.problems:
            # Only on an otherwise clean plan: a launch that failed to bind passed nothing.
            self.check_outputs_reached(writable)
        if self.problems:
            raise FormatError(_report(self.problems))
        return BoundPlan(self.plan.scratch, tuple(la for la in launches if la is not None))


def _report(problems: list[str]) -> str:
    """The first problem on the first line (what a one-line status shows), the rest below."""
    first, rest = problems[0], problems[1:MAX_PROBLEMS]
    if not rest:
        return f"launch plan: {first}"
    lines = "\n".join(f"- {p}" for p in rest)
    unlisted = len(problems) - MAX_PROBLEMS
    tail = f"\n(and {unlisted} more)" if unlisted > 0 else ""
    return f"launch plan: {first}\n{len(problems) - 1} more problem(s) in this plan:\n{lines}{tail}"


def _int_c(size: int) -> str:
    return "int" if size == 4 else "long long"


def bind_plan(
    plan: LaunchPlan, task: Task, kernels: KernelScan, ptx_params: dict[str, tuple[int, ...]] | None = None
) -> BoundPlan:
    """Check `plan` against `task` and the kernels' signatures (and, when given, the byte size
    of each kernel parameter in the compiled PTX); raise FormatError listing every problem."""
    return _Binder(plan, task, kernels, ptx_params).bind()
