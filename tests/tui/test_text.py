"""What the screens say must not mislead: text from outside (task files, model replies, server
errors, compiler logs) is shown literally, never read as markup; the words agree with one another
(the prompt pane and the status line, the retries); nothing is cut where it matters."""

from __future__ import annotations

import dataclasses

from llm_servers import Reply
from rich.text import Text
from textual.widgets import Input, OptionList, Tree

from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from cuda_llm.engine.core.settings import RetryPolicy
from cuda_llm.engine.task import TaskLibrary
from tui.helpers import FAST_LOOP, by_request, make_app, reply_for, screen_text, stalled, streamed, wait_for

# Markup that Rich would eat (or fail on) if the text were read as markup.
MARKUP = "x[i] [bold]b[/bold] [/] [red on blue]c[/] [link=file:///etc/passwd]d[/link] [@click=app.quit]e[/]"


def tree_lines(tree: Tree) -> list[str]:
    """What the tree shows, line by line, as drawn (cut where the pane cuts it)."""
    return ["".join(seg.text for seg in tree.render_line(y)).rstrip() for y in range(tree.size.height)]


async def test_every_task_summary_is_shown_literally(tmp_path, refused_url):
    tasks = {t.name: t.summary for t in TaskLibrary().load_all() if hasattr(t, "summary")}
    assert "[i]" in tasks["prefix_sum"]
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        options = app.screen.query_one("#task-list", OptionList)
        for i in range(options.option_count):
            options.highlighted = i
            await pilot.pause()
            name = options.get_option_at_index(i).id
            shown = screen_text(app, "#task-summary")
            assert shown.startswith(tasks[name]), (name, shown)


async def test_outside_text_is_never_markup(tmp_path, llm_server):
    """A model name, a server error, a reply and a kernel's compiler errors full of markup: every
    pane and line that shows them shows them whole."""
    model = "loop-model"
    note = f"Note {MARKUP}."
    broken = reply_for("vadd4", note).replace("float4 y =", "float4 y = undefined_thing[i] +")
    llm_server.default = by_request(
        {
            (1, 0, 0): Reply.text(*[broken[i : i + 20] for i in range(0, len(broken), 20)]),
            (1, 1, 0): Reply.status_error(500, f"overloaded {MARKUP}"),
        },
        default=streamed("vadd_us40"),
    )
    loop = dataclasses.replace(FAST_LOOP, retry=RetryPolicy(attempts=1, base_delay_s=0.01, max_delay_s=0.05))
    app = make_app(tmp_path, llm_server.url, loop=loop, task="vector_add", model=f"ollama:{model}", candidates=1)
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: "r1-fix1-1" in app.screen.view.candidates, "the repair")
        await wait_for(pilot, lambda: app.screen.view.state == "paused", "the pause for the server's error")
        # The server's error: in the status line and the log, whole.
        assert f"overloaded {MARKUP}" in screen_text(app, "#status")
        assert f"overloaded {MARKUP}" in " ".join(screen_text(app, "#event-log").split("\n  "))
        # The reply and its compile errors.
        tree = app.screen.query_one("#candidates", Tree)
        node = next(n for n in tree.root.children[1].children if n.data == "r1-1")
        tree.select_node(node)
        await pilot.pause()
        # The reply is wrapped to the pane: its lines, joined where they were broken, hold the note whole.
        assert note in "".join(app.screen.query_one("#prompt-log").lines)
        assert "undefined_thing[i]" in screen_text(app, "#kernel-source")
        assert 'identifier "undefined_thing" is undefined' in screen_text(app, "#compiler-diagnostics")
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


async def test_the_prompt_pane_and_the_status_line_agree_while_streaming(tmp_path, llm_server):
    llm_server.default = by_request({(1, 0, 0): stalled("vadd_us40", 2.0)}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: "1 streaming" in screen_text(app, "#status"), "the reply streaming")
        assert screen_text(app, "#prompt-title") == "r1-1: round 1 (streaming)"
        lines = screen_text(app, "#prompt-log").splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("── reply r1-1 "))
        assert set(lines[header].removeprefix("── reply r1-1 ")) == {"─"}  # the header is a line of its own
        assert lines[header + 1].startswith("Vectorised")  # the reply starts on the next line
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision")
        assert screen_text(app, "#prompt-title") == "r1-1: round 1 (correct)"


async def test_retries_are_not_called_streaming(tmp_path, refused_url, monkeypatch):
    """An unreachable host: every request waits to be retried, and the status line says so."""
    from cuda_llm.engine.fsr import session

    async def answered(provider) -> None:  # it answered the pre-session check, then went away
        return None

    monkeypatch.setattr(session, "check_model", answered)
    loop = dataclasses.replace(FAST_LOOP, retry=RetryPolicy(attempts=3, base_delay_s=1.0, max_delay_s=1.0))
    app = make_app(tmp_path, refused_url, loop=loop, task="vector_add", model="ollama:loop-model", candidates=4)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("f5")
        await wait_for(pilot, lambda: "waiting to retry" in screen_text(app, "#status"), "the retries")
        seen = set()
        while app.screen.view.state != "paused":
            seen.add(screen_text(app, "#status"))
            await pilot.pause(0.05)
        assert any("4 waiting to retry (see the log)" in s for s in seen), seen
        assert not any("streaming" in s for s in seen), seen
        status = screen_text(app, "#status")
        assert status.startswith("‖ paused: cannot reach the ollama server") and status.count("cannot reach") == 1


async def test_the_wide_layout_shows_every_mark_and_decision_whole(tmp_path, llm_server):
    llm_server.default = by_request(
        {
            (1, 0, 0): streamed("vadd_wrong"),
            (1, 1, 0): streamed("vadd_us40"),  # r1-fix1-1: the longest label of a round
            (2, 0, 0): streamed("vadd_us30"),
        },
    )
    app = make_app(
        tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=2, auto_accept=True
    )
    async with app.run_test(size=(140, 40)) as pilot:  # the narrowest wide layout
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end")
        assert app.screen.layout_mode == "wide"
        await pilot.pause()
        shown = "\n".join(tree_lines(app.screen.query_one("#candidates", Tree)))
        for label in ("r1-1 wrong", "r1-fix1-1 40.0 us · auto-accepted", "r2-1 30.0 us best · auto-accepted"):
            assert label in shown, (label, shown)


async def test_a_start_screen_message_is_beside_its_field(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url, task="vector_add", model="manual")
    async with app.run_test(size=(100, 50)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        app.screen.query_one("#opt-n", Input).value = "0"
        await pilot.press("f5")
        await pilot.pause()
        message = app.screen.query_one("#start-message")
        button = app.screen.query_one("#start")
        assert screen_text(app, "#start-message") == "N must be between 1 and 32, got 0"
        assert 0 < message.region.y - button.region.y <= 2, (message.region, button.region)


def test_plain_keeps_what_markup_would_eat():
    from cuda_llm.app.widgets.text import plain

    assert Text.from_markup("y = x[i] [bold]b[/bold]").plain != "y = x[i] [bold]b[/bold]"  # the danger
    assert plain(MARKUP).plain == MARKUP
