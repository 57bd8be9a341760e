"""The candidate contract: what a model's reply must contain and how it binds to a task.

The model writes device code only; the harness owns allocation, copies and launches. A reply is one
fenced `cuda` block and one fenced `json` launch plan (docs/architecture.md, "The reply contract"). The path from a raw
reply to what the GPU worker runs:

    parsed = parse_reply(text)                        # blocks, JSON, plan structure
    kernels = parse_kernels(parsed.source)            # extern "C" __global__ signatures
    bound = bind_plan(parsed.plan, task, kernels)     # names, counts, types, const-ness

Each step raises FormatError with a message written for the model.
"""

from cuda_llm.engine.contract.binding import bind_plan
from cuda_llm.engine.contract.reply import MAX_REPLY_BYTES, ParsedReply, parse_reply
from cuda_llm.engine.contract.signature import KernelParam, KernelScan, KernelSignature, parse_kernels
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.task.plan import (
    BoundArg,
    BoundLaunch,
    BoundPlan,
    Launch,
    LaunchPlan,
    ParamType,
    PlanArg,
    ScratchBuffer,
    parse_plan,
)

__all__ = [
    "MAX_REPLY_BYTES",
    "BoundArg",
    "BoundLaunch",
    "BoundPlan",
    "FormatError",
    "KernelParam",
    "KernelScan",
    "KernelSignature",
    "Launch",
    "LaunchPlan",
    "ParamType",
    "ParsedReply",
    "PlanArg",
    "ScratchBuffer",
    "bind_plan",
    "parse_kernels",
    "parse_plan",
    "parse_reply",
]
