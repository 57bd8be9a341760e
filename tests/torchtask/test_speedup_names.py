"""Every speedup names what it is over: "x the baseline" for a hand-written task, "x eager" for a task
imported from a PyTorch module, and "x torch.compile" beside it where torch.compile was timed. One
formatter (engine/judge/metrics.py speedup_text) says it for eval, the round lines, the headless
progress, the TUI's panes, the report and the prompt. No PyTorch needed."""

from __future__ import annotations

import dataclasses
import io

from cuda_llm.app.cli import eval_cmd, report
from cuda_llm.app.cli.progress import ProgressPrinter
from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.latency import figures_text
from cuda_llm.app.widgets.status import status_text
from cuda_llm.engine.core import serialize
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.protocol import Fault, Timing
from cuda_llm.engine.judge.judge import describe_timing
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Judgement
from cuda_llm.engine.judge.metrics import Figures, figures, speedup_text, speedup_text_of
from cuda_llm.engine.task import TaskLibrary


def _timing(label: str, median_us: float) -> Timing:
    return Timing(label, median_us, median_us * 0.99, median_us * 1.01, median_us * 0.98, 50, 0, "events", 1, None)


def _tasks():
    hand = TaskLibrary().get("vector_add")
    # What `tasks import` writes: the same task record with the module's file named.
    imported = dataclasses.replace(hand, pytorch_module="module.py")
    return hand, imported


def test_the_speedup_names_the_baseline_kind():
    hand, imported = _tasks()
    t, base = _timing("r1-1", 40.0), _timing(BASELINE_LABEL, 100.0)
    assert speedup_text(figures(hand, t, None, base)) == "2.50x the baseline"
    assert speedup_text(figures(imported, t, None, base)) == "2.50x eager"
    assert describe_timing(figures(imported, t, None, base)).endswith(", 2.50x eager")
    # torch.compile timed (at 60 us): its time over the candidate's, beside eager's.
    fig = figures(imported, t, None, base, torch_compile=_timing("torch.compile", 60.0))
    assert speedup_text(fig) == "2.50x eager, 1.50x torch.compile"
    # A torch.compile timing that failed gives no second figure.
    failed = dataclasses.replace(_timing("torch.compile", 60.0), fault=Fault("launch_error", "x", "it failed"))
    assert figures(imported, t, None, base, torch_compile=failed).torch_compile_speedup is None
    assert speedup_text(figures(imported, t, None, None)) is None  # no baseline timing: no speedup


def test_stored_figures_keep_the_name_and_older_records_read_as_the_baseline():
    _hand, imported = _tasks()
    fig = figures(imported, _timing("r1-1", 40.0), None, _timing(BASELINE_LABEL, 100.0), 1.0, _timing("tc", 50.0))
    stored = serialize.dump(fig)
    assert speedup_text_of(stored) == "2.50x eager, 1.25x torch.compile"
    assert serialize.load(Figures, stored) == fig
    older = {k: v for k, v in stored.items() if k not in ("baseline_name", "torch_compile_speedup")}
    assert speedup_text_of(older) == "2.50x the baseline"
    assert serialize.load(Figures, older).baseline_name == "the baseline"


def test_every_consumer_says_eager_for_an_imported_task():
    _hand, imported = _tasks()
    t, base = _timing("r1-1", 40.0), _timing(BASELINE_LABEL, 100.0)
    fig = figures(imported, t, None, base, torch_compile=_timing("torch.compile", 60.0))
    best = Judgement("r1-1", "correct", describe_timing(fig), timing=t, figures=fig)
    # eval
    shown = eval_cmd.render(best, "Fake H100 (sm_90)").splitlines()
    at = next(i for i, x in enumerate(shown) if x.startswith("profile:"))
    assert shown[at].endswith("2.50x eager, 1.50x torch.compile"), shown[at]
    # the figures line below it: each share in the shared wording (engine/judge/metrics.py share_text)
    roofline = f"; {fig.roofline_pct:.0f}% of the achievable roofline (floor {fig.floor_us:.1f} us, {fig.bound}-bound)"
    physical = f", {fig.physical_pct:.0f}% of the physical limit (floor {fig.physical_floor_us:.1f} us)"
    assert roofline + physical in shown[at + 1], shown[at + 1]
    # the headless progress's round line
    out = io.StringIO()
    ProgressPrinter(out, live=False)(
        ev.RoundFinished("1", 1, True, "r1-1", 40.0, 2.5, None, 10, best_speedup_text=speedup_text(fig))
    )
    assert "best r1-1 40.0 us, 2.50x eager, 1.50x torch.compile;" in out.getvalue()
    # the TUI's latency pane and status line
    view = SessionView()
    view.apply(ev.SessionStarted("1", "vector_add", "ollama:m", "Fake H100 (sm_90)", _loop()))
    view.best = best
    assert figures_text(view).splitlines()[0].startswith("best r1-1: 40.0 us · 2.50x eager, 1.50x torch.compile")
    assert "best r1-1 40.0 us (2.50x eager)" in status_text(view, False, [])[0]
    base_fig = figures(imported, base, None, base)
    view.best = Judgement(BASELINE_LABEL, "correct", "", timing=base, figures=base_fig)
    assert figures_text(view).startswith("best: eager, 100.0 us")
    assert "best: eager, 100.0 us" in status_text(view, False, [])[0]
    # the session report's best line
    lines = report.markdown(_report(serialize.dump(fig)))
    assert "40.0 us (IQR 0.8), 2.50x eager, 1.50x torch.compile, " in lines


def test_a_hand_written_task_keeps_its_words():
    hand, _imported = _tasks()
    t, base = _timing("r1-1", 40.0), _timing(BASELINE_LABEL, 100.0)
    fig = figures(hand, t, None, base)
    view = SessionView()
    view.apply(ev.SessionStarted("1", "vector_add", "ollama:m", "Fake H100 (sm_90)", _loop()))
    view.best = Judgement("r1-1", "correct", describe_timing(fig), timing=t, figures=fig)
    assert "best r1-1 40.0 us (2.50x)" in status_text(view, False, [])[0]
    assert figures_text(view).splitlines()[0].startswith("best r1-1: 40.0 us · 2.50x the baseline ·")


def _loop():
    from cuda_llm.engine.core.settings import LoopSettings

    return LoopSettings()


def _report(figs: dict) -> dict:
    """The fields report.markdown reads of a session with a best."""
    return {
        "session": 1,
        "task": "vector_add",
        "model": "ollama:m",
        "server": None,
        "device": "Fake H100 (sm_90)",
        "status": "finished",
        "status_message": "",
        "created": "2026-01-01",
        "tokens_used": 0,
        "settings": {},
        "environment": {},
        "baseline_us": 100.0,
        "best": {"label": "r1-1", "round": 1, "figures": figs, "counters": None},
        "compile_only": False,
        "history": [],
        "rounds": [],
    }
