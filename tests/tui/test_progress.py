"""The status line says how far the session is, as lazygit, k9s and btop users expect: the round out
of the session's rounds and the model's live token rate while a reply streams ("round 1/3, 41 tok/s").
The loopback model server streams the reply; the fake GPU judges it."""

from __future__ import annotations

import re

from llm_servers import Reply

from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.screens.start import StartScreen
from tui.helpers import by_request, make_app, reply_for, screen_text, wait_for

SETTINGS = {"task": "vector_add", "model": "ollama:loop-model", "target_roofline": 0.0}
RATE = re.compile(r"running round 1/3, \d+ tok/s")


def slow_stream(name: str) -> Reply:
    """A reply streamed in 8-character pieces 30 ms apart: a few seconds of streaming, long enough
    for a rate to be shown."""
    text = reply_for(name, note="Vectorised loads, one float4 per thread. " * 4)
    return Reply.text(*[text[i : i + 8] for i in range(0, len(text), 8)], chunk_delay_s=0.03)


async def test_the_status_line_shows_the_round_of_the_rounds_and_the_token_rate(tmp_path, llm_server):
    llm_server.default = by_request({}, default=slow_stream("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, candidates=1, rounds=3, auto_accept=True, **SETTINGS)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        # Redrawn on a timer while it streams: no engine event says the rate changed.
        await wait_for(pilot, lambda: RATE.search(screen_text(app, "#status")), "the rate while r1-1 streams", 90)
        await wait_for(pilot, lambda: "r1-1" in app.screen.view.candidates, "r1-1")
        assert app.screen.view.candidates["r1-1"].phase == "streaming", screen_text(app, "#status")
        # Once the reply is in, no rate (nothing streams), the round still out of the rounds.
        await wait_for(
            pilot,
            lambda: (
                app.screen.view.candidates["r1-1"].phase != "streaming"
                and "round 1/3" in screen_text(app, "#status")
                and "tok/s" not in screen_text(app, "#status")
            ),
            "the line without a rate once r1-1 is received",
        )
        app.screen.request_stop()
