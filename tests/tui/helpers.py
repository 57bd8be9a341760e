"""Shared pieces of the TUI tests: the app wired to the loopback model server and the fake GPU,
scripted kernels whose names steer the fake GPU, and bounded waits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from fakes.fake_gpu import FakeGpu, fake_environment
from llm_servers import RecordedRequest, Reply
from scripted import BROKEN_KERNEL, GOOD_KERNEL, GOOD_PLAN, chunked, reply
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Log, OptionList, Static, TextArea, Tree

from cuda_llm.app.app import CudaLlmApp
from cuda_llm.app.options import Defaults, SessionRequest
from cuda_llm.engine.core.settings import GenerateOptions, LoopSettings, RetryPolicy

# Retries and timeouts as in production, minus the seconds of waiting.
FAST_LOOP = LoopSettings(
    retry=RetryPolicy(attempts=1, base_delay_s=0.01, max_delay_s=0.05),
    # A seed makes every request carry (round, attempt, slot) in its options: see by_request().
    generate=GenerateOptions(timeout_s=30.0, first_token_timeout_s=15.0, seed=0),
    patience=None,
    target_roofline=None,
)
WAIT_S = 20.0  # the longest any test waits for the app (a whole session takes about a second)


def kernel(name: str) -> str:
    """The scripted vector_add kernel under another name: the name tells the fake GPU what to do
    (vadd_wrong, vadd_crash, vadd_hang, vadd_us40...)."""
    return GOOD_KERNEL.replace("vadd4", name)


def plan(name: str) -> dict:
    return {"launches": [dict(GOOD_PLAN["launches"][0], kernel=name)]}


def reply_for(name: str, note: str = "Vectorised loads.") -> str:
    return reply(kernel(name), plan(name), note)


def streamed(name: str, delay_s: float = 0.0) -> Reply:
    text = reply_for(name)
    return Reply.text(*[text[i : i + 24] for i in range(0, len(text), 24)], chunk_delay_s=delay_s)


def stalled(name: str, seconds: float) -> Reply:
    """A reply that stops after a few pieces for `seconds` (long enough to see it streaming)."""
    text = reply_for(name)
    return Reply.stall_mid(seconds, *[text[i : i + 24] for i in range(0, len(text), 24)], at=2)


def broken() -> Reply:
    return chunked(reply(BROKEN_KERNEL))


def request_key(rec: RecordedRequest) -> tuple[int, int, int]:
    """(round, attempt, slot) of a chat request, from the seed the loop derives for it
    (seed + 7919 round + 104729 attempt + slot, with seed 0)."""
    body = rec.body if isinstance(rec.body, dict) else {}
    seed = int((body.get("options") or {}).get("seed", body.get("seed", 0)))
    attempt, rest = divmod(seed, 104729)
    round_, slot = divmod(rest, 7919)
    return round_, attempt, slot


def by_request(table: dict[tuple[int, int, int], Reply], default: Reply | None = None):
    """A responder for the loopback server: the reply for each (round, attempt, slot), whatever
    order the N concurrent requests of a round arrive in."""

    def respond(rec: RecordedRequest) -> Reply:
        key = request_key(rec)
        if key in table:
            return table[key]
        if default is None:
            return Reply.status_error(400, f"no scripted reply for {key}")
        return default

    return respond


def make_app(
    tmp_path: Path,
    host: str | None,
    gpu: FakeGpu | None = None,
    *,
    loop: LoopSettings = FAST_LOOP,
    start: SessionRequest | None = None,
    compile_only: bool = False,
    **config,
) -> CudaLlmApp:
    """The app with its config and database under tmp_path, the fake GPU (compile_only: no GPU at
    all, the real compile-only environment), and no NVML polling; `start` opens the run screen at
    once, as `cuda-llm run` does."""
    gpu = gpu or FakeGpu()

    async def environment(_options):
        return fake_environment(gpu)

    defaults = Defaults(db=str(tmp_path / "sessions.db"), host=host, loop=loop, compile_only=compile_only, arch="sm_90")
    return CudaLlmApp(
        defaults,
        start,
        config_path=tmp_path / "tui.toml",
        config_overrides=config,
        environment_factory=None if compile_only else environment,
        poll_telemetry=False,
    )


async def wait_for(pilot: Pilot, predicate: Callable[[], object], what: str, timeout: float = WAIT_S) -> None:
    """Let the app run until predicate() is true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except Exception:  # a widget not mounted yet, a screen still changing
            pass
        if time.monotonic() > deadline:
            view = getattr(pilot.app.screen, "view", None)
            where = f"; screen {type(pilot.app.screen).__name__}"
            if view is not None:
                where += f", state {view.state}, error {view.error!r}, log {view.log[-4:]}"
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{where}")
        await pilot.pause(0.05)


def text(widget: Widget) -> str:
    """The plain text a widget shows."""
    if isinstance(widget, Log):
        return "\n".join(widget.lines)
    if isinstance(widget, TextArea):
        return widget.text
    if isinstance(widget, OptionList):
        return "\n".join(str(widget.get_option_at_index(i).prompt) for i in range(widget.option_count))
    if isinstance(widget, DataTable):
        return "\n".join(" | ".join(str(c) for c in widget.get_row_at(i)) for i in range(widget.row_count))
    if isinstance(widget, Tree):
        out: list[str] = []

        def walk(node) -> None:
            out.append(str(node.label))
            for child in node.children:
                walk(child)

        walk(widget.root)
        return "\n".join(out)
    if isinstance(widget, Static):
        return str(widget.render())
    return " ".join(text(c) for c in widget.query("Static, Log, TextArea, OptionList, DataTable, Tree"))


def screen_text(app: CudaLlmApp, selector: str) -> str:
    return text(app.screen.query_one(selector))


async def settle(pilot: Pilot) -> None:
    await pilot.pause(0.05)
    await asyncio.sleep(0)
