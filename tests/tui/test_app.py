"""The TUI beyond the main path: no model server (manual mode), resuming a stored session, faults
that must never crash the app, telemetry, the command palette, and the layout at two sizes."""

from __future__ import annotations

import dataclasses

import pytest
from fakes.fake_gpu import FakeGpu, fake_environment
from textual.widgets import TextArea

from cuda_llm.app.config import Endpoint
from cuda_llm.app.model_choices import ModelChoice
from cuda_llm.app.screens.modals import EditScreen
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.session import SessionOptions, open_session
from cuda_llm.engine.gpu.telemetry import TelemetrySample
from cuda_llm.engine.judge.judgement import Judgement
from tui.helpers import FAST_LOOP, by_request, make_app, request_key, screen_text, stalled, streamed, wait_for


async def test_no_model_server_says_so_and_manual_works(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url, task="vector_add", model="manual", candidates=1, rounds=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "no ollama server" in screen_text(app, "#model-status"), "the server line")
        status = screen_text(app, "#model-status")
        assert status == f"no ollama server at {refused_url}: start `ollama serve`, or pick manual"
        assert "manual" in screen_text(app, "#model-list")
        await pilot.press("f5")
        await wait_for(pilot, lambda: "waiting for your kernel" in screen_text(app, "#status"), "the manual request")
        assert "r1-1 waiting for your kernel: e writes it" in screen_text(app, "#status")
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, EditScreen), "the editor")
        source = app.screen.query_one("#edit-source", TextArea)
        assert "__global__ void vector_add" in source.text  # starts from the current best: the baseline
        for area_id in ("#edit-source", "#edit-plan"):
            area = app.screen.query_one(area_id, TextArea)
            area.text = area.text.replace("vector_add", "vadd_us25")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision on the written kernel")
        assert "r1-1 25.0 us" in screen_text(app, "#candidates")
        await pilot.press("f2")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end of the session")
        assert "4.00x" in screen_text(app, "#status")


async def test_resume_a_stored_session(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us50"))
    db = str(tmp_path / "sessions.db")
    control = Controller(auto_accept=True, stop_when_paused=True)
    options = SessionOptions(
        "vector_add", "ollama:loop-model", dataclasses.replace(FAST_LOOP, rounds=2, candidates=1), db, llm_server.url
    )
    session = await open_session(options, control, environment=fake_environment(FakeGpu()))
    session.bus.subscribe(lambda e: control.stop() if isinstance(e, ev.RoundFinished) else None)
    try:
        first = await session.run()
    finally:
        await session.close()
    assert first.status == "stopped"

    asked_before = len(llm_server.chat_requests)
    app = make_app(tmp_path, llm_server.url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: str(first.session_id) in screen_text(app, "#sessions"), "the stored session")
        assert "stopped" in screen_text(app, "#sessions")
        await pilot.press("f3")  # the Sessions tab
        await pilot.press("f6")  # resume the selected one
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the resumed session's end")
        log = screen_text(app, "#event-log")
        assert f"session {first.session_id} resumed" in log
        tree = screen_text(app, "#candidates")
        assert "round 1" in tree and "r1-1 50.0 us" in tree and "r2-1" in tree, tree  # the whole history
        asked = [request_key(r) for r in llm_server.chat_requests[asked_before:]]
        assert asked == [(2, 0, 0)], f"round 1 was done: it is not asked again ({asked})"


class BrokenGpu(FakeGpu):
    async def validate(self, task, program):
        if program.label != "baseline":
            raise RuntimeError("the GPU fell off the bus")
        return await super().validate(task, program)


async def test_a_gpu_fault_is_a_state_not_a_crash(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, BrokenGpu(), task="vector_add", model="ollama:loop-model", candidates=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f5")
        await wait_for(pilot, lambda: app.screen.view.state == "failed", "the failure")
        assert "the GPU fell off the bus" in screen_text(app, "#status")
        assert app.is_running
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen again")


async def test_a_session_that_cannot_open_says_why(tmp_path, llm_server):
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        app.screen.query_one("#model-spec").value = "replay:999"
        await pilot.press("f5")
        await wait_for(pilot, lambda: app.screen.view.state == "failed", "the error")
        assert "no session 999" in screen_text(app, "#status")


async def test_bad_choices_are_one_line_on_the_start_screen(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url, task="vector_add", model="")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        app.screen.query_one("#model-spec").value = "gpt-4"
        await pilot.press("f5")
        assert "pick a model, or type one" in screen_text(app, "#start-message")
        app.screen.query_one("#model-spec").value = "manual"
        app.screen.query_one("#opt-n").value = "0"
        await pilot.press("f5")
        assert screen_text(app, "#start-message") == "N must be between 1 and 32, got 0"
        assert isinstance(app.screen, StartScreen)


def test_a_telemetry_reading_with_no_screen_up_is_kept_not_a_crash(tmp_path, refused_url):
    """The sampler's thread posts its reading whenever NVML answers: after the app's last screen went
    (the app leaving) or before its first is up. The reading is kept for the bar that comes up; the
    app must not fail on a screen stack that is empty (it did, once in a CI run)."""
    from cuda_llm.app.messages import TelemetryRead

    sample = TelemetrySample(1755, 1980, 2619, 61, 412.0, 700.0, 97, 40, 12 * 1024**3, 80 * 1024**3, 0, 1)
    app = make_app(tmp_path, refused_url)
    assert not app.screen_stack
    app.on_telemetry_read(TelemetryRead(sample))
    assert app.telemetry_sample == sample


async def test_telemetry_bar_shows_nvml_readings(tmp_path, refused_url):
    sample = TelemetrySample(1755, 1980, 2619, 61, 412.0, 700.0, 97, 40, 12 * 1024**3, 80 * 1024**3, 0, 1)
    app = make_app(tmp_path, refused_url)
    app.sampler = lambda: sample
    async with app.run_test(size=(160, 48)) as pilot:
        # Polled once the first screen is up (a busy machine may not have pushed it yet).
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        app.poll_telemetry()
        await wait_for(pilot, lambda: "SM 1755/1980 MHz" in screen_text(app, "#bar-gpu"), "the telemetry")
        bar = screen_text(app, "#bar-gpu")
        assert "61 °C" in bar and "412/700 W" in bar and "util 97%" in bar and "mem 12.0/80 GiB" in bar
        assert "1 other process(es)" in bar
        # Narrow, the readings drop their limits and the memory: the session keeps room on the left.
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: "SM 1755 MHz" in screen_text(app, "#bar-gpu"), "the compact telemetry")
        assert screen_text(app, "#bar-gpu").startswith("SM 1755 MHz · 61 °C · 412 W · 97%")
        assert app.screen.query_one("#bar-context").size.width >= 20  # it had 10
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        assert screen_text(app, "#bar-gpu") == "GPU: no telemetry (no NVML device)"


async def test_palette_offers_the_screen_actions_and_themes(tmp_path, refused_url):
    from cuda_llm.app.options import SessionRequest

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "manual")), autostart=False)
        await app.push_screen(screen)
        screen.view.state = "running"
        winner = Judgement("r1-1", "correct", "correct")
        screen.post_message(_event(ev.AwaitingDecision("1", 1, winner, 100.0)))
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(screen)]
        for title in (
            "Accept (a / f2)",
            "Reject (r / f3)",
            "Edit (e / f4)",
            "Stop (s / f8)",
            "Model/N/D (m / f7)",
            "Theme: light",
            "Theme: high contrast",
        ):
            assert title in titles, titles
        assert len([t for t in titles if t.startswith("Accept")]) == 1  # one entry an action
        assert not any(t.startswith("Back") for t in titles)  # not while the session runs
        await pilot.press("ctrl+p")
        await pilot.press(*"high contrast", "enter")
        await wait_for(pilot, lambda: app.theme == "cuda-contrast", "the palette's theme")


def _event(event):
    from cuda_llm.app.messages import EngineEvent

    return EngineEvent(event)


async def test_layout_is_tabs_when_small_and_panes_when_large(tmp_path, refused_url):
    from cuda_llm.app.options import SessionRequest

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "manual")), autostart=False)
        await app.push_screen(screen)
        await pilot.pause()
        panes = dict(screen.panes)
        shown = [p for p in panes.values() if p.display]
        assert screen.query_one("#pane-tabs").display and shown == [panes["prompt-pane"]]
        await pilot.resize_terminal(200, 60)
        await wait_for(pilot, lambda: screen.layout_mode == "wide", "the side-by-side layout")
        await pilot.pause()
        assert not screen.query_one("#pane-tabs").display
        for pane in panes.values():
            assert pane.display and pane.region.width > 20, pane
        # The same widgets, never rebuilt: a writer holding one never finds it gone.
        assert all(screen.query_one(f"#{pane_id}") is pane for pane_id, pane in panes.items())


async def test_pause_settings_and_auto_accept_between_rounds(tmp_path, llm_server):
    from cuda_llm.app.screens.modals import SettingsScreen

    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=2)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.view.state != "opening", "the session open")
        await pilot.press("f5")  # pause: taken before the next round
        await pilot.press("f6")  # auto-accept on: round 1's winner needs no decision
        await wait_for(pilot, lambda: app.screen.view.state == "paused", "the pause")
        assert "paused: paused by the user" in screen_text(app, "#status")
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), "the settings dialog")
        app.screen.query_one("#settings-d").value = "3"
        await pilot.press("enter")
        await pilot.press("f5")  # resume
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end of the session")
        assert "from now on: rounds = 3" in screen_text(app, "#event-log")
        assert "finished: 3 rounds done" in screen_text(app, "#status")
        assert "★ r1-1 40.0 us best · auto-accepted" in screen_text(app, "#candidates")


def test_cuda_llm_run_opens_the_run_screen(monkeypatch, tmp_path):
    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.launcher import main

    opened = {}

    def run(self, *args, **kwargs):
        opened["request"] = self.start_request

    monkeypatch.setattr(CudaLlmApp, "run", run)
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path))
    assert main(["run", "vector_add", "--model", "manual", "-N", "2", "--db", str(tmp_path / "s.db")]) == 0
    options = opened["request"].options
    assert (options.task, options.model, options.loop.candidates) == ("vector_add", "manual", 2)
    assert main(["--compile-only"]) == 0 and opened["request"] is None  # no command: the start screen


async def test_a_broken_config_is_one_line_and_the_defaults(tmp_path, refused_url):
    (tmp_path / "tui.toml").write_text("candidates = [")
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        messages = [n.message for n in app._notifications]
        assert len(messages) == 1 and "is not a usable config" in messages[0] and "\n" not in messages[0]
        assert app.config.candidates == 4  # the default N
        # (the field says 1: with no server answering, manual is picked, and a person writes one a round)
        assert app.screen.query_one("#opt-n").value == ("1" if app.screen.chosen_model.spec == "manual" else "4")


async def test_help_lists_every_key(tmp_path, refused_url):
    from cuda_llm.app.screens.modals import HelpScreen

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        rows = {row[1]: row for row in app.screen.rows}
        assert rows["Start"][0] == "s / f5" and rows["Start"][3] == "start.start"
        assert rows["theme"][0] == "ctrl+t"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen again")


@pytest.mark.fault(
    "process and machine", "Ctrl-C in the TUI", "clean stop: session 'stopped', database intact; resumes and finishes"
)
async def test_ctrl_c_stops_the_session_cleanly_and_it_resumes(tmp_path, llm_server, observed):
    from cuda_llm.engine.store.sessions import SessionStore

    # Round 1 streams slowly, so Ctrl-C lands while a reply is in flight.
    llm_server.default = by_request({(1, 0, 0): stalled("vadd_us50", 1.0)}, default=streamed("vadd_us50"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=2)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.view.round >= 1, "round 1")
        await pilot.press("ctrl+c")
    assert app.return_code == 0
    store = SessionStore(tmp_path / "sessions.db")
    try:
        (record,) = store.sessions()
        assert record.status == "stopped", (record.status, record.status_message)
        assert store.integrity_ok()
    finally:
        store.close()
    control = Controller(auto_accept=True, stop_when_paused=True)
    options = SessionOptions(None, None, FAST_LOOP, str(tmp_path / "sessions.db"), llm_server.url, resume=record.id)
    session = await open_session(options, control, environment=fake_environment(FakeGpu()))
    try:
        result = await session.run()
    finally:
        await session.close()
    # Resumed headless (stop_when_paused): it accepts by itself, though the TUI recorded reviews on.
    assert result.status == "finished" and result.rounds == 2
    observed(f"app quit with code 0; session {record.id} 'stopped', integrity ok; --resume finished 2 rounds")


async def test_what_the_engine_waits_for_while_a_session_opens_is_a_notification(monkeypatch, tmp_path):
    """A Ray cluster's wait for GPUs is said before the session's events flow: the run screen passes
    the engine a progress callable that notifies."""
    from cuda_llm.app.options import SessionRequest
    from cuda_llm.app.screens.runscreen import worker as session_worker

    line = "Ray counts 0 of the 1 GPU of the cluster at 127.0.0.1:6379 free: waiting up to 120 s for 1 more"
    real_open = session_worker.open_session

    async def opening(options, control, environment=None, progress=None):
        assert progress is not None, "the run screen gives the engine no way to say what it waits for"
        progress(line)
        return await real_open(options, control, environment=environment, progress=progress)

    monkeypatch.setattr(session_worker, "open_session", opening)
    options = SessionOptions("vector_add", "manual", db=str(tmp_path / "sessions.db"))
    app = make_app(tmp_path, None, start=SessionRequest(options))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: any(n.message == line for n in app._notifications), "the waiting line")
        (shown,) = [n for n in app._notifications if n.message == line]
        assert shown.title == "opening the session"


async def test_a_repeated_kernel_says_which_it_repeats_in_the_candidate_list(tmp_path, llm_server):
    """Two slots stream the same kernel: one is judged and timed, the other takes its verdict, and the
    list says so instead of a correct kernel that was never timed (engine/fsr/repeats.py)."""
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(
        tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=2, rounds=1, auto_accept=True
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f5")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end of the session")
        tree = screen_text(app, "#candidates")
        timed, repeat = ("r1-1", "r1-2") if "r1-1 40.0 us" in tree else ("r1-2", "r1-1")
        assert f"★ {timed} 40.0 us best · auto-accepted" in tree, tree
        assert f"✓ {repeat} correct (repeats {timed})" in tree, tree


async def test_a_named_endpoint_gives_its_url_to_its_backends_server_option(tmp_path, refused_url):
    """openai's URL is a base_url, ollama's a host: engine/llm/spec.py's backends say which."""
    endpoints = (
        Endpoint("box", "openai", "http://box:8000/v1", "m"),
        Endpoint("lab", "ollama", "http://lab:11434", "q"),
    )
    app = make_app(tmp_path, refused_url, task="vector_add", model="", endpoints=endpoints)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await wait_for(pilot, lambda: any(c.endpoint for c in app.screen.models), "the endpoints listed")
        by_name = {c.endpoint: c for c in app.screen.models if c.endpoint}
        assert by_name["box"] == ModelChoice("openai:m", "box  openai m", base_url="http://box:8000/v1", endpoint="box")
        assert by_name["lab"] == ModelChoice("ollama:q", "lab  ollama q", host="http://lab:11434", endpoint="lab")
