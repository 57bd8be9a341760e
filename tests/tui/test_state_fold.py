"""The session view folds engine events by their class: every event the engine defines has a fold
or is listed as ignored, and a resumed session's history goes through the same folds as the live
events did, so the two views agree."""

from __future__ import annotations

from cuda_llm.app.state import FOLDS, IGNORED_EVENTS, SessionView
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.llm.base import Completion, Message
from tui.test_best_figure import judged


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def test_every_engine_event_has_a_fold_or_is_ignored():
    defined = {c for c in _subclasses(ev.Event) if c.__module__ == ev.__name__}
    missing = sorted(c.__name__ for c in defined - set(FOLDS) - IGNORED_EVENTS)
    assert not missing, f"engine events the run screen neither folds nor ignores: {missing}"
    assert not (set(FOLDS) & IGNORED_EVENTS)


def _completion(text: str) -> Completion:
    return Completion(text, "m", None, None, 0.0, None, "stop")


def test_a_restored_history_gives_the_view_the_live_events_gave():
    prompt = (Message("user", "write vadd"),)
    fast, wrong = judged("r1-1", 40.0), judged("r1-2", 90.0)
    wrong = type(wrong)("r1-2", "wrong", "mismatch", candidate=wrong.candidate)
    second = judged("r2-1", 35.0)
    live = SessionView()
    for event in (
        ev.RoundStarted("1", 1, 0, prompt, 2),
        ev.RequestStarted("1", "r1-1", 1, 0, 0),
        ev.RequestStarted("1", "r1-2", 1, 0, 1),
        ev.ReplyReceived("1", "r1-1", _completion("reply one")),
        ev.ReplyReceived("1", "r1-2", _completion("reply two")),
        ev.CandidateJudged("1", "validate", fast),
        ev.CandidateJudged("1", "validate", wrong),
        ev.DecisionMade("1", "r1-1", "accepted"),
        ev.RoundFinished("1", 1, True, "r1-1", 40.0, 2.5, None, 10),
        ev.RoundStarted("1", 2, 0, prompt, 1),
        ev.RequestStarted("1", "r2-1", 2, 0, 0),
        ev.ReplyReceived("1", "r2-1", _completion("reply three")),
        ev.CandidateJudged("1", "validate", second),
        ev.DecisionMade("1", "r2-1", "rejected", "keep fp32"),
        ev.RoundFinished("1", 2, False, "r1-1", 40.0, 2.5, None, 20),
    ):
        live.apply(event)
    resumed = SessionView()
    resumed.apply(
        ev.HistoryRestored(
            "1",
            (
                ev.RestoredCandidate("r1-1", 1, 0, 0, "reply one", fast, "accepted"),
                ev.RestoredCandidate("r1-2", 1, 0, 1, "reply two", wrong),
                ev.RestoredCandidate("r2-1", 2, 0, 0, "reply three", second, "rejected", "keep fp32"),
            ),
            (
                {"round": 1, "best": "r1-1", "best_median_us": 40.0, "improved": True},
                {"round": 2, "best": "r1-1", "best_median_us": 40.0, "improved": False},
            ),
            ((1, 0, prompt), (2, 0, prompt)),
            fast,
            20,
        )
    )

    def shown(view: SessionView) -> dict:
        return {
            "candidates": {
                c.label: (c.round, c.attempt, c.slot, c.state, c.reply, c.median_us, c.decision, c.reason)
                for c in view.candidates.values()
            },
            "latency": view.latency,
            "best_by_round": view.best_by_round,
            "round_best": view.round_best,
            "prompts": view.prompts,
            "best": view.best_label,
            "round": view.round,
        }

    assert shown(resumed) == shown(live)
    assert any("restored 2 recorded round(s)" in line for line in resumed.log)
    assert not any("accepted" in line for line in resumed.log), "past events are not logged again"


def test_a_correct_repeat_is_judged_at_once_never_profiling():
    # A repeat takes its first's verdict and is never timed: no RoundProfiled moves it on, so a
    # "profiling" phase stayed on it (the prompt pane's title read "r2-2: round 2 (profiling)").
    import dataclasses

    repeat = dataclasses.replace(judged("r2-2", 40.0), repeat_of="r1-1", timing=None)
    view = SessionView()
    for event in (
        ev.RoundStarted("1", 2, 0, (Message("user", "faster"),), 2),
        ev.RequestStarted("1", "r2-2", 2, 0, 1),
        ev.ReplyReceived("1", "r2-2", _completion("the same kernel")),
        ev.CandidateJudged("1", "validate", repeat),
    ):
        view.apply(event)
    c = view.candidates["r2-2"]
    assert c.phase == "judged" and c.state == "correct", (c.phase, c.state)


def test_the_models_error_is_not_shown_once_the_session_goes_on():
    # The server died, the person switched server with `m` and the round was retried: the
    # "cannot reach" line stayed under the status for the rest of the session.
    view = SessionView()
    for event in (
        ev.RoundStarted("1", 1, 0, (Message("user", "write vadd"),), 1),
        ev.RequestStarted("1", "r1-1", 1, 0, 0),
        ev.ModelFailed("1", "r1-1", "unreachable", "cannot reach the model server at http://a:1"),
        ev.SessionPaused("1", "the model server cannot be reached"),
    ):
        view.apply(event)
    assert "cannot reach" in view.error
    view.apply(ev.SessionResumed("1"))
    assert view.error == "" and view.state == "running"
    assert any("cannot reach" in line for line in view.log), "the log keeps it"
