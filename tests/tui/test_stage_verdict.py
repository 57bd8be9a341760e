""" "compiled" is a stage on the way to the GPU and, in a compile-only session, a verdict: the
validation pane tells them apart, so no screen shows a verdict for a stage."""

from __future__ import annotations

import dataclasses

from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.validation import not_validated
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.judge.judgement import Judgement
from cuda_llm.engine.llm.base import Completion, Message
from tui.test_best_figure import judged


def _compiled_stage(compile_only: bool) -> SessionView:
    view = SessionView()
    view.compile_only = compile_only
    cand = judged("r1-1", 40.0).candidate
    for event in (
        ev.RoundStarted("1", 1, 0, (Message("user", "write vadd"),), 1),
        ev.RequestStarted("1", "r1-1", 1, 0, 0),
        ev.ReplyReceived("1", "r1-1", Completion("reply", "m", None, None, 0.0, None, "stop")),
        ev.CandidateJudged("1", "compiled", Judgement("r1-1", "compiled", "compiled", candidate=cand)),
    ):
        view.apply(event)
    return view


def test_the_validation_pane_during_a_gpu_validation_says_it_validates():
    view = _compiled_stage(compile_only=False)
    c = view.candidates["r1-1"]
    line = not_validated(view, c)
    assert c.phase == "validating" and "validated on the GPU" in line, line
    assert "no GPU" not in line and "compile-only" not in line


def test_a_compile_only_verdict_says_it_was_not_run():
    view = _compiled_stage(compile_only=True)
    c = view.candidates["r1-1"]
    assert c.state == "compiled", c.phase
    assert not_validated(view, c) == "compile-only: compiled and bound, not run (no GPU)"
    failed = dataclasses.replace(c, judgement=Judgement("r1-1", "compile_error", "error: x"))
    assert not_validated(view, failed).startswith("not run: ")
