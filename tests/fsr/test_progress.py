"""The session's progress in words, as the TUI's status line and the headless run's lines both say it:
"round 3/10, 41 tok/s" (engine/fsr/progress.py)."""

from __future__ import annotations

import io
import re

import pytest

from cuda_llm.app.cli.progress import ProgressPrinter
from cuda_llm.app.state import SessionView
from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.progress import RATE_MIN_SPAN_S, RATE_WINDOW_S, TokenRate, progress_text
from cuda_llm.engine.judge.judgement import Judgement


def test_the_round_out_of_the_rounds_the_repair_and_the_rate() -> None:
    assert progress_text(3, 10) == "round 3/10"
    assert progress_text(3, 10, tokens_per_s=41.4) == "round 3/10, 41 tok/s"
    assert progress_text(2, 5, attempt=1, tokens_per_s=12.0) == "round 2/5, repair 1, 12 tok/s"
    assert progress_text(4, None) == "round 4"  # D not known: the round alone


def test_the_rate_is_the_tokens_of_the_last_window_over_it() -> None:
    rate = TokenRate()
    for i in range(200):  # 40 tokens a second for 5 s
        rate.add(100.0 + i / 40)
    assert rate.per_s(105.0) == pytest.approx(40.0, abs=0.5)
    # The stream stalls: the rate falls within the window, then there is none.
    assert rate.per_s(105.0 + RATE_WINDOW_S / 2) == pytest.approx(20.0, abs=0.5)
    assert rate.per_s(105.0 + RATE_WINDOW_S) is None


def test_no_rate_from_the_first_handful_of_tokens() -> None:
    rate = TokenRate()
    rate.add(10.0, tokens=5)
    assert rate.per_s(10.0 + RATE_MIN_SPAN_S / 2) is None
    assert rate.per_s(10.0 + RATE_MIN_SPAN_S) == 5 / RATE_MIN_SPAN_S


def test_a_new_stream_after_a_quiet_window_starts_its_own_span() -> None:
    rate = TokenRate()
    for i in range(100):
        rate.add(i / 10)  # 10 a second for 10 s
    rate.add(30.0, tokens=2)  # 20 s later: a new reply's first tokens
    assert rate.per_s(30.1) is None  # not 2 tokens over a whole window
    assert rate.per_s(31.0) == 2.0


def test_the_view_and_the_headless_lines_say_the_same() -> None:
    settings = LoopSettings(rounds=10)
    events: list[ev.Event] = [
        ev.SessionStarted(1, "vector_add", "ollama:m", "compile-only (sm_90)", settings),
        ev.RoundStarted(1, 3, 0, (), 2, rounds=10),
        ev.RequestStarted(1, "r3-1", 3, 0, 0),
    ]
    now = [50.0]
    out = io.StringIO()
    printer = ProgressPrinter(out, live=True, clock=lambda: now[0])
    view = SessionView()
    for e in events:
        printer(e)
        view.apply(e)
    for i in range(82):  # 41 tokens a second for 2 s
        now[0] = 50.0 + i / 41
        printer(ev.TokensStreamed(1, "r3-1", "x"))
        view.add_tokens("r3-1", "x", at=now[0])
    now[0] = 52.0
    assert view.progress(now[0]) == printer.progress() == "round 3/10, 41 tok/s"
    lines = out.getvalue()
    assert "round 3/10: asking for 2 candidates" in lines
    # The live line, redrawn with each token (at the last one's time, so its rate is of 82 tokens in 1.98 s).
    assert re.search(r"\r\x1b\[K  round 3/10, 4[12] tok/s · streaming: r3-1 82 tokens$", lines), lines[-200:]


def test_the_rounds_follow_a_change_of_d_and_no_rate_once_nothing_streams() -> None:
    view = SessionView()
    view.apply(ev.SessionStarted(1, "vector_add", "ollama:m", "compile-only (sm_90)", LoopSettings(rounds=5)))
    view.apply(ev.RoundStarted(1, 1, 0, (), 1, rounds=5))
    assert view.progress() == "round 1/5"
    view.apply(ev.RoundStarted(1, 2, 0, (), 1, rounds=8))  # the person made D 8
    view.apply(ev.RequestStarted(1, "r2-1", 2, 0, 0))
    for i in range(20):
        view.add_tokens("r2-1", "x", at=float(i))
    assert view.progress(2.0) == "round 2/8, 10 tok/s"
    view.apply(ev.CandidateJudged(1, "validate", Judgement("r2-1", "wrong", "wrong at n=3")))
    assert view.progress(2.0) == "round 2/8"  # judged, not streaming: no rate
