"""A copy inside tmux with its default set-clipboard ('external') cannot reach the clipboard: the
TUI says so and what to do (a script stands in for tmux)."""

from __future__ import annotations

import os

from cuda_llm.app.clipboard import osc52_blocked


def fake_tmux(tmp_path, answer: str, status: int = 0) -> dict[str, str]:
    script = tmp_path / "tmux"
    script.write_text(f"#!/bin/sh\necho '{answer}'\nexit {status}\n")
    script.chmod(0o755)
    return {"TMUX": "/tmp/tmux-0/default,1,0", "PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}


def test_tmux_s_default_blocks_the_copy_and_says_what_to_do(tmp_path):
    line = osc52_blocked(fake_tmux(tmp_path, "external"))
    assert line is not None and "'external'" in line and "set -g set-clipboard on" in line


def test_a_copy_that_reaches_the_clipboard_says_nothing(tmp_path):
    assert osc52_blocked(fake_tmux(tmp_path, "on")) is None
    assert osc52_blocked({"PATH": os.environ.get("PATH", "")}) is None  # not in tmux
    assert osc52_blocked(fake_tmux(tmp_path, "", status=1)) is None  # tmux could not tell


async def test_y_inside_tmux_with_its_default_warns_beside_the_copy(tmp_path, llm_server, monkeypatch):
    from tui.helpers import by_request, make_app, streamed, wait_for
    from tui.test_screen_defects import SETTINGS, start

    for name, value in fake_tmux(tmp_path, "external").items():
        monkeypatch.setenv(name, value)
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=1, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(100, 30)) as pilot:
        await start(pilot, app)
        await wait_for(pilot, lambda: not app.screen.view.running, "the end", 60)
        await pilot.press("y")
        said = lambda: [str(n.message) for n in app._notifications]  # noqa: E731
        await wait_for(pilot, lambda: any("set -g set-clipboard on" in m for m in said()), "the warning")
        assert any(m.startswith("copied r1-1's kernel") for m in said())
