"""Resuming a session rebuilds the whole view from the database: every round, every candidate with
its verdict and decision, the best, the latency history; the tree, the latency pane and the status
line agree. With a GPU (the fake one) and compile-only."""

from __future__ import annotations

import re
from collections import Counter

from fakes.fake_gpu import FakeGpu

from cuda_llm.app.options import Defaults, resume_session
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.store.sessions import SessionStore
from tui.helpers import by_request, make_app, request_key, screen_text, stalled, streamed, wait_for


def awaiting(app) -> str | None:
    v = getattr(app.screen, "view", None)
    return v.awaiting.judgement.label if v is not None and v.awaiting is not None else None


def best_named(app) -> dict[str, str]:
    """The best as each part of the run screen names it."""
    tree = screen_text(app, "#candidates")
    starred = [line.split()[1] for line in tree.splitlines() if line.startswith("★")]
    status = re.search(r"best (\S+) ", screen_text(app, "#status"))
    latency = re.search(r"^best (\S+):", screen_text(app, "#latency-figures"))
    return {
        "tree": starred[0] if starred else "",
        "status": status.group(1) if status else "",
        "latency": latency.group(1) if latency else "",
    }


async def test_resume_after_accept_and_reject_shows_every_round(tmp_path, llm_server):
    llm_server.default = by_request(
        {
            (1, 0, 0): streamed("vadd_wrong"),
            (1, 0, 1): streamed("vadd_us40"),  # r1-2: accepted
            (2, 0, 0): streamed("vadd_us30"),  # r2-1: rejected with a reason
            (2, 0, 1): streamed("vadd_hang"),
            (3, 0, 0): stalled("vadd_us20", 30.0),  # in flight when the person quits
            (3, 0, 1): stalled("vadd_us20", 30.0),
        },
        default=streamed("vadd_us25"),
    )
    settings = {"task": "vector_add", "model": "ollama:loop-model", "candidates": 2, "rounds": 4}
    app = make_app(tmp_path, llm_server.url, target_roofline=0.0, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-2", "the round 1 decision")
        await pilot.press("a")
        await wait_for(pilot, lambda: awaiting(app) == "r2-1", "the round 2 decision")
        await pilot.press("r")
        await pilot.press(*"keep it scalar", "enter")
        await wait_for(pilot, lambda: "r3-1" in app.screen.view.candidates, "round 3 in flight")
        before = screen_text(app, "#candidates")
        session_id = app.screen.view.session_id
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the quit")
    store = SessionStore(tmp_path / "sessions.db")
    try:
        assert store.session(session_id).status == "stopped"
    finally:
        store.close()

    # `cuda-llm run --resume ID`: the run screen at once.
    request = resume_session(Defaults(db=str(tmp_path / "sessions.db")), session_id, auto_accept=False)
    app = make_app(tmp_path, llm_server.url, start=request)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: "round 3" in screen_text(app, "#candidates"), "the history")
        tree = screen_text(app, "#candidates")
        for line in (
            "· baseline 100.0 us",
            "round 1",
            "✗ r1-1 wrong",
            "★ r1-2 40.0 us best · accepted",
            "round 2",
            "r2-1 30.0 us · rejected",
            "r2-2 timed out",
            "round 3",
        ):
            assert line in tree, (line, tree)
        assert before.count("\n") <= tree.count("\n")  # nothing that was shown before is missing
        # The tree, the latency pane and the status line name the same best, with the same time.
        assert best_named(app) == {"tree": "r1-2", "status": "r1-2", "latency": "r1-2"}, best_named(app)
        assert "best r1-2: 40.0 us · 2.50x the baseline" in screen_text(app, "#latency-figures")
        assert "best r1-2 40.0 us (2.50x)" in screen_text(app, "#status")
        view = app.screen.view
        assert {p.label for p in view.latency} >= {"r1-2", "r2-1"}  # every timed candidate on the plot
        assert [r for r, _ in sorted(view.best_by_round)][:2] == [1, 2]
        assert view.candidates["r2-1"].reason == "keep it scalar"
        # The history is what the kernel pane compares with: r2-1 was written from r1-2, the best.
        assert view.parent_of("r2-1") == "r1-2"
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


async def test_a_compile_only_resume_keeps_its_earlier_rounds(tmp_path, llm_server):
    asked: Counter = Counter()

    def respond(rec):
        key = request_key(rec)
        asked[key] += 1
        if key == (3, 0, 0) and asked[key] == 1:
            return stalled("vadd_us20", 30.0)  # in flight when the person quits; answered on resume
        return streamed("vadd_us40")

    llm_server.default = respond
    settings = {"task": "vector_add", "model": "ollama:loop-model", "candidates": 1, "rounds": 3, "patience": 0}
    app = make_app(tmp_path, llm_server.url, compile_only=True, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: "r3-1" in app.screen.view.candidates, "round 3 in flight", 60)
        assert app.screen.view.compile_only
        session_id = app.screen.view.session_id
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the quit")

    app = make_app(tmp_path, llm_server.url, compile_only=True, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: str(session_id) in screen_text(app, "#sessions"), "the stored session")
        await pilot.press("l", "r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: "round 3" in screen_text(app, "#candidates"), "the history", 60)
        tree = screen_text(app, "#candidates")
        for line in ("round 1", "r1-1 compiled", "round 2", "r2-1 compiled", "round 3"):
            assert line in tree, (line, tree)
        figures = screen_text(app, "#latency-figures")
        assert "nothing is timed without a GPU" in figures and "compiled" in figures
        assert "best: the baseline" in screen_text(app, "#status")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        assert "no winner could be chosen" in screen_text(app, "#status")


async def quit_at_the_decision(tmp_path, llm_server, edit=None) -> int:
    """A one-round session of one candidate (r1-1, 40 us), quit while its winner awaits a decision; its
    id. With `edit` (a callable that sets the person's editor) the winner is first edited: r1-edit1."""
    llm_server.default = streamed("vadd_us40")
    settings = {"task": "vector_add", "model": "ollama:loop-model", "candidates": 1, "rounds": 1}
    app = make_app(tmp_path, llm_server.url, target_roofline=0.0, **settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "the round 1 decision")
        if edit is not None:
            edit()
            await pilot.press("e")
            await wait_for(pilot, lambda: awaiting(app) == "r1-edit1", "the edited kernel's decision")
        view = app.screen.view
        session_id = view.session_id
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the quit")
    # Said as it quits: on the screen's log, and in the line the terminal keeps.
    winner = "r1-edit1" if edit is not None else "r1-1"
    assert f"{winner} was left undecided: a resume times it again and asks you first" in view.log, view.log
    line = app.quit_line()
    assert line is not None and line.startswith(
        f"cuda-llm: session {session_id} stopped with {winner} awaiting your decision; "
        f"resume it with: cuda-llm run --resume {session_id} --db "
    ), line
    return session_id


def resumed(tmp_path, llm_server, session_id: int, gpu: FakeGpu | None = None):
    """The app as `cuda-llm run --resume ID` opens it, decisions left to the person."""
    request = resume_session(Defaults(db=str(tmp_path / "sessions.db")), session_id, auto_accept=False)
    return make_app(tmp_path, llm_server.url, gpu, start=request)


async def test_a_winner_undecided_when_the_person_quit_is_offered_again_on_resume(tmp_path, llm_server):
    """Quitting while a round's winner awaits a decision leaves it undecided: the resume offers it
    again (timed again beside the best) before the next round, rather than counting the round as one
    without gain and dropping the candidate. Once accepted, a later resume does not ask again."""
    session_id = await quit_at_the_decision(tmp_path, llm_server)
    db = tmp_path / "sessions.db"
    store = SessionStore(db)
    try:
        assert store.rounds(session_id)[-1]["pending"] == "r1-1"
        assert store.session(session_id).best_label == "baseline"
        message = store.session(session_id).status_message
        assert message == "stopped by the user; r1-1 awaits a decision, which a resume asks for first", message
    finally:
        store.close()

    app = resumed(tmp_path, llm_server, session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: awaiting(app) == "r1-1", "r1-1 offered again")
        await pilot.press("a")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end: its one round was done")
        assert best_named(app) == {"tree": "r1-1", "status": "r1-1", "latency": "r1-1"}, best_named(app)
    assert "awaiting" not in (app.quit_line() or "") and "finished" in (app.quit_line() or "")
    store = SessionStore(db)
    try:
        last = store.rounds(session_id)[-1]
        assert last["pending"] is None and last["improved"] and last["no_gain"] == 0, last
        assert last["best"] == "r1-1" and "r1-1 accepted on resume" in last["history"], last
        assert store.session(session_id).best_label == "r1-1"
        assert store.session(session_id).status_message == "1 rounds done"
        assert [c.decision for c in store.candidates(session_id) if c.label == "r1-1"] == ["accepted"]
    finally:
        store.close()

    app = resumed(tmp_path, llm_server, session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end, with nothing to ask")
        assert awaiting(app) is None
        assert best_named(app)["status"] == "r1-1"


async def test_an_undecided_winner_that_no_longer_beats_the_best_is_not_offered_again(tmp_path, llm_server):
    """Timed again on resume, the undecided winner lost its lead (here: the GPU now runs the baseline
    at 30 us, faster than its 40): it is not offered, the session says why, and it goes on."""
    session_id = await quit_at_the_decision(tmp_path, llm_server)

    db = tmp_path / "sessions.db"
    app = resumed(tmp_path, llm_server, session_id, FakeGpu(baseline_us=30.0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end, with nothing to ask")
        assert awaiting(app) is None
        said = [line for line in app.screen.view.log if "undecided when the session stopped" in line]
        assert said and "no longer beats the best (baseline) timed again" in said[0], app.screen.view.log
    store = SessionStore(db)
    try:
        assert store.rounds(session_id)[-1]["pending"] is None
        assert store.session(session_id).best_label == "baseline"
    finally:
        store.close()


async def test_an_edit_of_the_winner_offered_again_gets_a_label_of_its_own(tmp_path, llm_server, monkeypatch):
    """Edits are numbered across the session: one made on resume, in the round an earlier edit was made
    in, is r1-edit2, never a second r1-edit1 that the store and the tree would take for the first."""
    from tui.test_editing import editor

    monkeypatch.delenv("EDITOR", raising=False)
    session_id = await quit_at_the_decision(
        tmp_path, llm_server, lambda: monkeypatch.setenv("VISUAL", editor(tmp_path, "vadd_us40", "vadd_us20"))
    )

    db = tmp_path / "sessions.db"
    app = resumed(tmp_path, llm_server, session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: awaiting(app) == "r1-edit1", "r1-edit1 offered again")
        monkeypatch.setenv("VISUAL", editor(tmp_path, "vadd_us20", "vadd_us15"))
        await pilot.press("e")
        await wait_for(pilot, lambda: awaiting(app) == "r1-edit2", "the second edit's decision")
        await pilot.press("a")
        await wait_for(pilot, lambda: not app.screen.view.running, "the end")
        mine = [line for line in screen_text(app, "#candidates").splitlines() if "r1-edit2" in line and "★" in line]
        assert mine and mine[0].endswith("best · accepted"), screen_text(app, "#candidates")
    store = SessionStore(db)
    try:
        labels = [c.label for c in store.candidates(session_id)]
        assert labels.count("r1-edit1") == 1 and labels.count("r1-edit2") == 1, labels
    finally:
        store.close()


async def test_a_headless_resume_auto_accepts_the_undecided_winner(tmp_path, llm_server):
    """`cuda-llm run --resume ID --headless` accepts every round's winner by itself: the winner left
    undecided in the TUI is timed again and auto-accepted before anything else."""
    from fakes.fake_gpu import fake_environment
    from session_driver import run_session

    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.fsr.session import SessionOptions

    session_id = await quit_at_the_decision(tmp_path, llm_server)
    opts = SessionOptions(task=None, model=None, db=str(tmp_path / "sessions.db"), resume=session_id)
    result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    assert result.status == "finished" and result.best is not None and result.best.label == "r1-1", result
    assert [(e.label, e.decision) for e in rec.of(ev.DecisionMade)] == [("r1-1", "auto-accepted")]
    assert not rec.of(ev.AwaitingDecision)
