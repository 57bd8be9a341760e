"""The best is timed again beside every round's candidates (and after a resume): its leaf in the
candidate tree, the status line and the latency pane must then show that one figure, not the tree the
time it was first measured at while the other two show the new one."""

from __future__ import annotations

import dataclasses

from cuda_llm.app.state import LATENCY, SessionView
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.protocol import Timing
from cuda_llm.engine.judge.judgement import Candidate, Judgement, RoundTiming
from cuda_llm.engine.task.plan import parse_plan

PLAN = parse_plan('{"launches": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x"]}]}')


def timing(label: str, us: float) -> Timing:
    return Timing(label, us, us * 0.99, us * 1.01, us * 0.98, 50, 0, "events", 1, 1980.0)


def judged(label: str, us: float, based_on: str | None = None) -> Judgement:
    cand = Candidate(label, "// source", PLAN, origin="user" if based_on else "model", based_on=based_on)
    return Judgement(label, "correct", f"{us} us", candidate=cand, timing=timing(label, us))


def restored(j: Judgement, round_: int, slot: int) -> ev.RestoredCandidate:
    return ev.RestoredCandidate(j.label, round_, 0, slot, "a reply", j)


def test_a_resumed_best_shows_its_new_time_everywhere():
    first = judged("r1-2", 128.1)
    retimed = dataclasses.replace(first, timing=timing("r1-2", 128.6))
    view = SessionView()
    history = (restored(judged("r1-1", 140.0), 1, 0), restored(first, 1, 1))
    view.apply(ev.HistoryRestored("1", history, (), (), retimed, 0))
    assert view.best is not None and view.best.timing.median_us == 128.6
    assert view.candidates["r1-2"].median_us == 128.6, "the tree's leaf shows the best as timed now"
    assert view.candidates["r1-1"].median_us == 140.0, "the others keep theirs"
    assert [p.median_us for p in view.latency if p.label == "r1-2"] == [128.1], "the history keeps the first"


def test_each_round_and_the_end_of_the_session_bring_the_best_up_to_date():
    view = SessionView()
    best = judged("r1-2", 128.1)
    view.apply(ev.CandidateJudged("1", "validate", best))
    view.apply(ev.BestImproved("1", 1, best, "baseline", 200.0))
    anchor = dataclasses.replace(best, timing=timing("r1-2", 127.4))
    view.apply(ev.RoundProfiled("1", 2, RoundTiming("gpu", None, (), anchor=anchor), "r1-2", 127.4))
    assert view.best.timing.median_us == view.candidates["r1-2"].median_us == 127.4
    end = dataclasses.replace(best, timing=timing("r1-2", 127.9))
    changed = view.apply(ev.SessionFinished("1", "2 rounds done", end, 2, 0))
    assert LATENCY in changed, "the latency pane's header names the best's time too"
    assert view.best.timing.median_us == view.candidates["r1-2"].median_us == 127.9


def test_an_edit_is_compared_with_the_kernel_it_was_edited_from():
    view = SessionView()
    for j in (judged("r1-1", 140.0), judged("r1-2", 128.1)):
        view.apply(ev.CandidateJudged("1", "validate", j))
    view.apply(ev.CandidateJudged("1", "validate", judged("r1-edit1", 120.0, based_on="r1-1")))
    assert view.parent_of("r1-edit1") == "r1-1"
