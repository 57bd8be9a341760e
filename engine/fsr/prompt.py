"""Build the prompts of the FSR loop from the template files in engine/prompts/.

A prompt is two messages: the system rules, and one user message with the task, the GPU, and the
round's instruction with its feedback (the best kernel and its figures; the failures of the last
request; the user's rejections). Feedback is trimmed to a character budget, failures losing detail
first, so prompts do not grow without bound.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from string import Template

from cuda_llm.engine.core.status import STATUSES
from cuda_llm.engine.counters.describe import prompt_text as counters_prompt_text
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks
from cuda_llm.engine.judge.judgement import Judgement, LibraryResult
from cuda_llm.engine.judge.metrics import ROOFLINE_NAME, roofline_text, speedup_text
from cuda_llm.engine.llm.base import Message
from cuda_llm.engine.task.model import Task

# Lines of a compile log kept per failed candidate at full detail.
COMPILE_LOG_LINES = 12
# Mismatches listed per failed candidate at full detail.
MISMATCH_LINES = 5

# What each architecture offers when there is no GPU to ask (compile-only mode, `--arch`).
ARCH_FACTS: dict[str, dict[str, int]] = {
    "sm_75": {
        "shared_per_block_optin": 65536,
        "shared_per_sm": 65536,
        "max_threads_per_sm": 1024,
        "max_blocks_per_sm": 16,
    },
    "sm_80": {
        "shared_per_block_optin": 166912,
        "shared_per_sm": 167936,
        "max_threads_per_sm": 2048,
        "max_blocks_per_sm": 32,
    },
    "sm_86": {
        "shared_per_block_optin": 101376,
        "shared_per_sm": 102400,
        "max_threads_per_sm": 1536,
        "max_blocks_per_sm": 16,
    },
    "sm_89": {
        "shared_per_block_optin": 101376,
        "shared_per_sm": 102400,
        "max_threads_per_sm": 1536,
        "max_blocks_per_sm": 24,
    },
    "sm_90": {
        "shared_per_block_optin": 232448,
        "shared_per_sm": 233472,
        "max_threads_per_sm": 2048,
        "max_blocks_per_sm": 32,
    },
}


def _template(name: str) -> Template:
    return Template((resources.files("cuda_llm.engine.prompts") / name).read_text(encoding="utf-8"))


def _dtype_notes(task: Task) -> str:
    """What the model must know of the task's less familiar dtypes: engine/prompts/dtype_<name>.md for
    each dtype of its buffers that has one (bfloat16's contract and the arithmetic it may use)."""
    notes = []
    for dtype in dict.fromkeys(b.dtype for b in task.buffers):
        page = resources.files("cuda_llm.engine.prompts") / f"dtype_{dtype}.md"
        if page.is_file():
            notes.append("\n" + page.read_text(encoding="utf-8").strip() + "\n")
    return "".join(notes)


def _si(value: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _bytes(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _us(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} us"


@dataclass(frozen=True)
class Rejection:
    label: str
    reason: str


def _failure_rank(status: str) -> int:
    """Failures in the order worth the model's attention (engine/core/status.py), anything else last."""
    rank = STATUSES[status].rank
    return 9 if rank is None else rank


class PromptBuilder:
    def __init__(
        self,
        task: Task,
        arch: str,
        nvrtc_version: str,
        device: DeviceInfo | None = None,
        peaks: Peaks | None = None,
        feedback_chars: int = 12_000,
        gpu_count: int = 1,
    ) -> None:
        self.task = task
        self.arch = arch
        self.nvrtc_version = nvrtc_version
        self.device = device
        self.peaks = peaks
        self.feedback_chars = feedback_chars
        self.gpu_count = gpu_count
        # The vendor library's figure on this GPU, once the loop has timed it (a target in the prompt).
        self.library: LibraryResult | None = None
        self._system = _template("system.md").substitute()
        self._task = self._task_section()
        self._gpu = self._gpu_section()

    # ---- fixed sections ------------------------------------------------------------------
    def _task_section(self) -> str:
        t = self.task
        buffers = "\n".join(f"- `{b.name}`: {b.role}, {b.dtype}[{', '.join(b.shape)}]" for b in t.buffers)
        scalars = "\n".join(
            f"- `{s.name}`: {s.type}, " + ("a size" if s.is_size else f"constant {s.value!r}") for s in t.scalars
        )
        tol = t.tolerance
        tolerance = {
            "exact": "bit-exact",
            "abs": f"|error| <= {tol.atol:g} + {tol.rtol:g} * |expected|",
            "rms": f"|error| <= {tol.atol:g} + {tol.rtol:g} * RMS(expected output)",
            "rms_or_abs": f"|error| <= {tol.atol:g} + {tol.rtol:g} * max(|expected|, RMS(expected output))",
            "custom": f"|error| <= {tol.atol:g} + {tol.rtol:g} * (the task's error scale, e.g. the sum of |terms|)",
        }[tol.scale]
        nbytes, flops = t.bytes_and_flops(t.timing)
        # A task imported from a PyTorch module shows the module, and eager as its baseline.
        template = "task_pytorch.md" if t.pytorch_module else "task.md"
        module_source = (t.folder / t.pytorch_module).read_text(encoding="utf-8").strip() if t.pytorch_module else ""
        return _template(template).substitute(
            dtype_notes=_dtype_notes(t),
            name=t.name,
            summary=t.summary,
            description=t.description,
            dtype_contract=t.dtype_contract,
            tolerance=tolerance,
            buffers=buffers,
            scalars=scalars,
            validation_sizes="; ".join(c.label for c in t.validation if not c.is_timing),
            timing_size=" ".join(f"{k}={v}" for k, v in t.timing.values),
            bytes=_si(nbytes, "B"),
            flops=_si(flops, "FLOP") if flops else "no",
            reference=t.reference_file.read_text(encoding="utf-8").strip(),
            module_source=module_source,
            baseline_source=t.baseline_source.strip(),
            baseline_plan=json.dumps(t.baseline_plan.to_json(), indent=1),
        )

    def _gpu_section(self) -> str:
        d = self.device
        facts = ARCH_FACTS.get(self.arch, ARCH_FACTS["sm_90"])
        if d is not None:
            values = {
                "name": d.name,
                "sm_count": d.sm_count,
                "max_threads_per_sm": d.max_threads_per_sm,
                "max_blocks_per_sm": d.max_blocks_per_sm,
                "warp_size": d.warp_size,
                "max_threads_per_block": d.max_threads_per_block,
                "registers_per_sm": d.registers_per_sm,
                "registers_per_block": d.registers_per_block,
                "shared_per_block": d.shared_per_block,
                "shared_per_block_optin": d.shared_per_block_optin,
                "shared_per_sm": d.shared_per_sm,
                "l2": _bytes(d.l2_bytes),
                "memory": f"{d.memory_bytes / 2**30:.0f} GiB",
            }
        else:
            values = {
                "name": f"a {self.arch} GPU (compile-only: no GPU attached)",
                "sm_count": "(unknown)",
                "warp_size": 32,
                "max_threads_per_block": 1024,
                "registers_per_sm": 65536,
                "registers_per_block": 65536,
                "shared_per_block": 49152,
                "l2": "(unknown)",
                "memory": "(unknown)",
                **facts,
            }
        p = self.peaks
        if p is not None:
            bandwidth = (
                f"memory bandwidth: {p.bandwidth / 1e12:.2f} TB/s achievable (the fastest of our streaming "
                f"probes on this GPU: {ROOFLINE_NAME}'s 100%), {p.bandwidth_physical / 1e12:.2f} TB/s physical "
                "(memory clock x bus width)"
            )
            compute = (
                f"fp32: {p.fp32_flops / 1e12:.1f} TFLOP/s achievable (FMA kernel), "
                f"{p.fp32_physical / 1e12:.1f} physical; "
                f"fp16 tensor cores: {p.fp16_tensor_flops / 1e12:.0f} TFLOP/s (datasheet)"
            )
        elif d is not None:
            bandwidth = f"memory bandwidth: {d.spec_bandwidth / 1e12:.2f} TB/s (from memory clock and bus width)"
            compute = f"SM clock up to {d.sm_clock_mhz} MHz"
        else:
            bandwidth = "memory bandwidth: unknown (no GPU attached)"
            compute = "compute rate: unknown (no GPU attached)"
        if d is None:
            source = "no GPU attached: candidates are compiled and checked, not run"
        elif self.gpu_count > 1:
            source = (
                f"timings come from {self.gpu_count} of these GPUs, each candidate compared with the "
                "baseline timed on the same GPU"
            )
        else:
            source = "timings come from this GPU"
        values.update(
            arch=self.arch,
            bandwidth_line=bandwidth,
            compute_line=compute,
            nvrtc_version=self.nvrtc_version,
            timing_source=source,
        )
        return _template("gpu.md").substitute(values)

    # ---- feedback ------------------------------------------------------------------------------
    def floor_text(self) -> str:
        if self.peaks is None:
            return "the memory and compute limits of this GPU"
        nbytes, flops = self.task.bytes_and_flops(self.task.timing)
        mem = nbytes / self.peaks.bandwidth
        peak = {"fp32": self.peaks.fp32_flops, "fp16_tensor": self.peaks.fp16_tensor_flops}.get(self.task.roofline.peak)
        comp = flops / peak if peak else 0.0
        bound = "memory" if mem >= comp else "compute"
        return f"{_us(max(mem, comp) * 1e6)} ({bound}-bound)"

    def render_failure(self, j: Judgement, detail: int) -> str:
        """One failed candidate at a detail level: 2 everything, 1 no source, 0 one line."""
        head = f"## {j.label}: {j.status.replace('_', ' ')}\n{j.message}"
        if detail == 0:
            return head
        lines = [head]
        if j.status == "format_error" and j.detail and j.detail.strip() != j.message:
            lines.append(j.detail.strip())
        if j.status == "compile_error" and j.compile is not None:
            errs = [d for d in j.compile.diagnostics if d.severity == "error"][:COMPILE_LOG_LINES]
            for d in errs:
                where = f"line {d.line}" + (f":{d.column}" if d.column else "") if d.line else "?"
                lines.append(f"{where}: {d.message}" + (f"\n    {d.source_line.strip()}" if d.source_line else ""))
            if not errs and j.detail:
                lines.extend(j.detail.strip().splitlines()[:COMPILE_LOG_LINES])
        v = j.validation
        if v is not None:
            lines.extend(f"pattern: {p}" for p in v.patterns)
            if v.mismatches:
                lines.append("first mismatches (case: output[index] expected -> got):")
                for m in v.mismatches[:MISMATCH_LINES]:
                    idx = ", ".join(str(i) for i in m.index)
                    lines.append(f"  {m.case}: {m.output}[{idx}] {m.expected:.7g} -> {m.got:.7g}")
            failed = [c for c in v.cases if not c.passed]
            if failed:
                lines.append(
                    f"failed cases: {', '.join(c.label for c in failed[:8])}"
                    + (f" (+{len(failed) - 8} more)" if len(failed) > 8 else "")
                )
        if j.warnings:
            lines.extend(f"note: {w}" for w in j.warnings)
        if detail >= 2 and j.candidate is not None:
            lines.append(f"its code:\n```cuda\n{j.candidate.source.strip()}\n```")
        return "\n".join(lines)

    def failures_text(self, failures: Sequence[Judgement]) -> str:
        ordered = sorted(failures, key=lambda j: _failure_rank(j.status))
        # Full detail for the most promising failure, no source for the rest, one line for a repeat of
        # a kernel shown here already (engine/fsr/repeats.py: its errors are the first one's); then trim.
        shown = {j.label for j in ordered}
        levels: list[int] = []
        for j in ordered:
            levels.append(0 if j.repeat_of in shown else 1 if 2 in levels else 2)
        while True:
            text = "\n\n".join(self.render_failure(j, lv) for j, lv in zip(ordered, levels, strict=True))
            if len(text) <= self.feedback_chars or not any(levels):
                break
            i = max(range(len(levels)), key=lambda k: (levels[k], k))
            levels[i] -= 1
        if len(text) > self.feedback_chars:
            text = text[: self.feedback_chars] + "\n[... trimmed]"
        return text

    @staticmethod
    def rejections_text(rejections: Sequence[Rejection]) -> str:
        if not rejections:
            return ""
        lines = ["The user reviewed earlier kernels and rejected these; take their reasons into account:"]
        lines += [f"- {r.label}: {r.reason or '(no reason given)'}" for r in rejections]
        return "\n".join(lines) + "\n"

    # ---- the prompts ---------------------------------------------------------------------------
    def _messages(self, instruction: str) -> list[Message]:
        user = "\n\n".join((self._task, self._gpu, instruction.strip()))
        return [Message("system", self._system), Message("user", user)]

    def library_text(self) -> str:
        """The vendor library's figure on this GPU, as a target; empty when there is none."""
        lib = self.library
        if lib is None or lib.timing is None or lib.figures is None:
            return ""
        speedup = f", {lib.figures.speedup:.2f}x {lib.figures.baseline_name}" if lib.figures.speedup else ""
        return (
            f"For reference, the vendor library ({lib.name}) takes {_us(lib.timing.median_us)} on this GPU"
            f"{speedup}: a target worth matching.\n"
        )

    def first(self, rejections: Sequence[Rejection] = ()) -> list[Message]:
        text = _template("first.md").substitute(floor=self.floor_text(), library=self.library_text())
        return self._messages(self.rejections_text(rejections) + text)

    def optimize(
        self,
        round_: int,
        best: Judgement,
        history: Sequence[str],
        rejections: Sequence[Rejection] = (),
        failures: Sequence[Judgement] = (),
    ) -> list[Message]:
        fig = best.figures
        figures = "no timing yet"
        if fig is not None:
            parts = [f"{fig.gbps:.0f} GB/s"]
            if fig.gflops:
                parts.append(f"{fig.gflops:.0f} GFLOP/s")
            if fig.floor_us:
                parts.append(roofline_text(fig.roofline_pct, fig.bound))
            if (speed := speedup_text(fig)) is not None:
                parts.append(speed)
            figures = ", ".join(parts)
        res = best.timing.resources if best.timing else ()
        resources = "; ".join(
            f"{r.kernel}: grid {r.grid}, block {r.block}, {r.registers} registers/thread, "
            f"{r.static_shared + r.dynamic_shared} B shared, {r.local_bytes} B local, "
            f"{r.blocks_per_sm} blocks/SM ({r.occupancy:.0%} occupancy)"
            for r in res
        )
        history_text = ("History:\n" + "\n".join(f"- {h}" for h in history) + "\n") if history else ""
        if failures:
            history_text += "\nThe last round's candidates that failed:\n" + self.failures_text(failures) + "\n"
        cand = best.candidate
        text = _template("optimize.md").substitute(
            round=round_,
            best_label=best.label,
            best_time=_us(best.timing.median_us) if best.timing else "(untimed)",
            best_figures=figures,
            best_resources=("Resources: " + resources) if resources else "",
            best_counters=counters_prompt_text(best.counters),
            best_source=cand.source.strip() if cand else "",
            best_plan=json.dumps(cand.plan.to_json(), indent=1) if cand else "",
            history=history_text,
            floor=self.floor_text(),
            library=self.library_text(),
        )
        return self._messages(self.rejections_text(rejections) + text)

    def repair(self, base: list[Message], failures: Sequence[Judgement]) -> list[Message]:
        """The previous request's prompt plus what went wrong with every candidate it produced."""
        text = _template("repair.md").substitute(failures=self.failures_text(failures))
        system, user = base[0], base[-1]
        return [system, Message("user", user.content + "\n\n" + text)]
