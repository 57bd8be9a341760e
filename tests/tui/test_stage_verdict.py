"""No screen shows a verdict for a stage: while a GPU validates a candidate, the panes say it is being
validated (ValidationStarted carries no verdict); "compiled" is a status only, compile-only mode's
verdict. The whole app on the fake GPU with a validation held open, and the view's fold alone."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

from fakes.fake_gpu import FakeGpu

from cuda_llm.app.options import SessionRequest
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.validation import not_validated
from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.session import SessionOptions
from cuda_llm.engine.gpu.protocol import ProgramRef, ValidationReport
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Judgement
from cuda_llm.engine.llm.base import Completion, Message
from cuda_llm.engine.task.model import Task
from tui.helpers import FAST_LOOP, by_request, make_app, screen_text, streamed, wait_for
from tui.test_best_figure import judged


@dataclass
class HeldValidation(FakeGpu):
    """The fake GPU, holding each candidate's validation open until the test releases it."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        if program.label != BASELINE_LABEL:
            self.started.set()
            await self.release.wait()
        return await super().validate(task, program)


async def test_the_validation_pane_during_a_gpu_validation_says_it_validates(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    gpu = HeldValidation()
    loop = dataclasses.replace(FAST_LOOP, candidates=1, rounds=1)
    opts = SessionOptions("vector_add", "ollama:loop-model", loop=loop, db=str(tmp_path / "s.db"), host=llm_server.url)
    app = make_app(tmp_path, llm_server.url, gpu, loop=loop, start=SessionRequest(opts, auto_accept=True))
    async with app.run_test(size=(200, 60)) as pilot:  # wide: every pane shows
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, gpu.started.is_set, "r1-1 on the (fake) GPU")
        await wait_for(pilot, lambda: "r1-1 validating" in screen_text(app, "#candidates"), "the tree's validating")
        assert app.screen.view.focused().label == "r1-1"
        assert app.screen.query_one("#validation-summary").display
        summary = screen_text(app, "#validation-summary")
        assert summary == "r1-1: compiled; being validated on the GPU", summary
        compiler = screen_text(app, "#compiler-summary")
        assert compiler.startswith("r1-1: compiled for sm_90") and "being validated on the GPU" in compiler, compiler
        assert "vadd_us40" in screen_text(app, "#compiler-resources"), "the kernel's registers meanwhile"
        assert "vadd_us40" in screen_text(app, "#kernel-source"), "the parsed kernel meanwhile"
        gpu.release.set()
        await wait_for(pilot, lambda: "correct in all" in screen_text(app, "#validation-summary"), "the verdict")
        assert "being validated" not in screen_text(app, "#compiler-summary")


def _sent_to_the_gpu(compile_only: bool) -> SessionView:
    """r1-1 compiled: sent to the GPU (a GPU session) or judged at once (compile-only)."""
    view = SessionView()
    view.compile_only = compile_only
    j = judged("r1-1", 40.0)
    cand, result = j.candidate, CompileResult(True, "sm_90", b"", "", "", (), (), {}, (13, 0), (), 0.1)
    assert cand is not None
    events: list[ev.Event] = [
        ev.RoundStarted(1, 1, 0, (Message("user", "write vadd"),), 1),
        ev.RequestStarted(1, "r1-1", 1, 0, 0),
        ev.ReplyReceived(1, "r1-1", Completion("reply", "m", None, None, 0.0, None, "stop")),
    ]
    if compile_only:
        events.append(ev.CandidateJudged(1, "validate", Judgement("r1-1", "compiled", "compiled", candidate=cand)))
    else:
        events.append(ev.ValidationStarted(1, "r1-1", cand, result))
    for event in events:
        view.apply(event)
    return view


def test_a_candidate_on_the_gpu_has_no_verdict_and_says_it_validates():
    view = _sent_to_the_gpu(compile_only=False)
    c = view.candidates["r1-1"]
    assert c.judgement is None and c.state == "validating" and c.candidate is not None
    line = not_validated(view, c)
    assert line == "compiled; being validated on the GPU", line


def test_a_compile_only_verdict_says_it_was_not_run():
    view = _sent_to_the_gpu(compile_only=True)
    c = view.candidates["r1-1"]
    assert c.state == "compiled", c.phase
    assert not_validated(view, c) == "compile-only: compiled and bound, not run (no GPU)"
    failed = dataclasses.replace(c, judgement=Judgement("r1-1", "compile_error", "error: x"))
    assert not_validated(view, failed).startswith("not run: ")
