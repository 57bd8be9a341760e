"""A fixed run of engine events for snapshot tests: the baseline and the vendor library timed, one
round with a compile error, a wrong kernel, a repair with a correct and a crashed one, and a winner
waiting for the person's decision.

Built by hand (no compiler, no clock, no NVRTC version) so the screen is the same on every machine.
"""

from __future__ import annotations

import json

from fakes.fake_gpu import FAKE_PEAKS_SLOW
from scripted import BROKEN_KERNEL, GOOD_PLAN

from cuda_llm.engine.compile.result import CompileResult, Diagnostic, KernelResources
from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.compare import Mismatch
from cuda_llm.engine.gpu.protocol import CaseReport, Fault, LaunchResources, Timing, ValidationReport
from cuda_llm.engine.judge.judgement import Candidate, Judgement, LibraryResult, RoundTiming
from cuda_llm.engine.judge.metrics import figures
from cuda_llm.engine.llm.base import Completion, Message
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan
from tui.helpers import kernel, plan, reply_for

SID = "7"
PROMPT = (
    Message("system", "You write CUDA kernels. Reply with one ```cuda block and one ```json launch plan."),
    Message(
        "user",
        "# Task: vector_add\n\nElement-wise sum of two float32 vectors: c = a + b\n\n"
        "GPU: Fake H100 (sm_90), 132 SMs, 50 MiB L2.\nWrite a faster kernel than the baseline.",
    ),
)
CASES = tuple(f"n={n} seed {s}" for n in (1, 3, 1000, 65537) for s in range(2))


def _compile(name: str | None, ok: bool = True) -> CompileResult:
    diagnostics: tuple[Diagnostic, ...] = ()
    if not ok:
        diagnostics = (
            Diagnostic(
                "error",
                7,
                20,
                'identifier "undefined_thing" is undefined',
                "        float4 y = undefined_thing + *reinterpret_cast<const float4*>(b + i);",
            ),
        )
    kernels = (KernelResources(name, 16, 0, 0, 0, 0, 0, 0),) if ok and name else ()
    return CompileResult(
        ok=ok,
        arch="sm_90",
        cubin=None,
        ptx=None,
        log="",
        diagnostics=diagnostics,
        kernels=kernels,
        ptx_entries={},
        nvrtc_version=(13, 0),
        options=(),
        elapsed_s=0.12,
        error=None if ok else "compile error",
    )


def _candidate(label: str, name: str, source: str | None = None) -> Candidate:
    return Candidate(label, source or kernel(name), parse_plan(json.dumps(plan(name))), "Vectorised loads.")


def _timing(label: str, median: float) -> Timing:
    return Timing(label, median, median * 0.99, median * 1.01, median * 0.98, 50, 0, "events", 1, 1980.0)


def _resources(name: str) -> tuple[LaunchResources, ...]:
    return (LaunchResources(0, name, (32768, 1, 1), (256, 1, 1), 0, 16, 0, 0, 0, 1024, 8, 1.0),)


def demo_events() -> list[ev.Event]:
    task = TaskLibrary().get("vector_add")
    base_t = _timing("baseline", 100.0)
    baseline_cand = Candidate("baseline", task.baseline_source, task.baseline_plan, origin="baseline")
    baseline = Judgement(
        "baseline",
        "correct",
        "correct; 100.0 us",
        candidate=baseline_cand,
        compile=_compile("vector_add"),
        timing=base_t,
        figures=figures(task, base_t, FAKE_PEAKS_SLOW, base_t),
    )
    wrong_case = "n=1000 seed 0"
    wrong = Judgement(
        "r1-2",
        "wrong",
        "wrong in 1 of 8 cases",
        candidate=_candidate("r1-2", "vadd_wrong"),
        compile=_compile("vadd_wrong"),
        validation=ValidationReport(
            "wrong",
            f"wrong in 1 of 8 cases; first: {wrong_case}: 3 elements wrong (1 never written)",
            tuple(CaseReport(c, c != wrong_case, 1000, 3 if c == wrong_case else 0, 0, 0.1) for c in CASES),
            (
                Mismatch("c", (997,), 1.5, 0.0, 1.5, 1.0, wrong_case),
                Mismatch("c", (998,), 2.5, 0.0, 2.5, 1.0, wrong_case),
                Mismatch("c", (999,), 3.5, float("nan"), float("nan"), float("nan"), wrong_case),
            ),
            ("the last 3 elements are wrong",),
            resources=_resources("vadd_wrong"),
        ),
    )
    fast_t = _timing("r1-fix1-1", 40.0)
    fast = Judgement(
        "r1-fix1-1",
        "correct",
        "correct; 40.0 us, 2.50x the baseline",
        candidate=_candidate("r1-fix1-1", "vadd_us40"),
        compile=_compile("vadd_us40"),
        validation=ValidationReport(
            "correct",
            "correct in all 8 cases",
            tuple(CaseReport(c, True, 1000, 0, 0, 0.1) for c in CASES),
            resources=_resources("vadd_us40"),
        ),
        timing=fast_t,
        figures=figures(task, fast_t, FAKE_PEAKS_SLOW, base_t),
    )
    crashed = Judgement(
        "r1-fix1-2",
        "crashed",
        "crashed in n=1 seed 0: CUDA_ERROR_ILLEGAL_ADDRESS",
        candidate=_candidate("r1-fix1-2", "vadd_crash"),
        compile=_compile("vadd_crash"),
        validation=ValidationReport(
            "crashed",
            "crashed in n=1 seed 0: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)",
            fault=Fault("crashed", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access", "n=1 seed 0"),
        ),
    )
    compile_error = Judgement(
        "r1-1",
        "compile_error",
        'compile error at line 7: identifier "undefined_thing" is undefined',
        candidate=Candidate("r1-1", BROKEN_KERNEL, parse_plan(json.dumps(GOOD_PLAN))),
        compile=_compile(None, ok=False),
    )

    def done(label: str, name: str) -> ev.ReplyReceived:
        return ev.ReplyReceived(SID, label, Completion(reply_for(name), "loop-model", 900, 300, 1.5, 0.2, "stop"))

    return [
        ev.SessionStarted(SID, "vector_add", "ollama:loop-model", "Fake H100 (sm_90)", LoopSettings(2, 3), at=0.0),
        ev.CandidateJudged(SID, "profile", baseline),
        ev.LibraryTimed(SID, LibraryResult("CuPy elementwise add", _timing("library", 35.0))),
        ev.RoundStarted(SID, 1, 0, PROMPT, 2),
        ev.RequestStarted(SID, "r1-1", 1, 0, 0),
        ev.RequestStarted(SID, "r1-2", 1, 0, 1),
        ev.TokensStreamed(SID, "r1-1", "Vectorised loads.\n"),
        done("r1-1", "vadd4"),
        done("r1-2", "vadd_wrong"),
        ev.CandidateJudged(SID, "compile", compile_error),
        ev.CandidateJudged(SID, "validate", wrong),
        ev.RoundStarted(SID, 1, 1, PROMPT, 2),
        ev.RequestStarted(SID, "r1-fix1-1", 1, 1, 0),
        ev.RequestStarted(SID, "r1-fix1-2", 1, 1, 1),
        done("r1-fix1-1", "vadd_us40"),
        done("r1-fix1-2", "vadd_crash"),
        ev.CandidateJudged(SID, "validate", crashed),
        ev.CandidateJudged(SID, "profile", fast),
        ev.RoundProfiled(SID, 1, RoundTiming("Fake H100", base_t, (fast,)), "baseline", 100.0),
        ev.AwaitingDecision(SID, 1, fast, 100.0),
    ]
