"""How quickly the TUI answers a key while a session is busy: the time from a key press to the
screen update that shows its effect, while the engine streams ~200 tokens/s and judges candidates.

The app runs headless (Textual's test driver) against the loopback model server (real ollama
client, real wire) with the fake GPU runner (tests/fakes): the real compiler compiles every
candidate, the fake answers validation and timing after a delay. Keys go in through the driver, as
a terminal's do; the update counts when the compositor has produced the terminal output for a
frame showing the key's effect (the bytes are built, then dropped instead of written).

    python bench/ui_latency.py [--presses 200] [--tokens-per-s 200] [--size 160x48]

It prints figures and where they were measured; it asserts nothing. Target: median under 50 ms,
p99 under 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CHARS_PER_TOKEN = 4  # about right for code
TOKENS_PER_CHUNK = 3


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import textual

    return (
        f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs ({cpu}), "
        f"Textual {textual.__version__}"
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


async def run(presses: int, tokens_per_s: float, size: tuple[int, int], candidates: int) -> None:
    from fakes.fake_gpu import FakeGpu, fake_environment
    from llm_servers import LoopbackLLMServer, Reply
    from textual import events
    from textual.widgets import Tree
    from tui.helpers import FAST_LOOP, reply_for

    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.options import Defaults, SessionRequest
    from cuda_llm.app.screens.run import PANES, RunScreen
    from cuda_llm.engine.fsr.session import SessionOptions

    text = reply_for("vadd_us40", note="Vectorised loads, one float4 per thread. " * 8)  # ~400 tokens
    # A few tokens a chunk, as servers batch them under load; the loopback server's per-chunk
    # overhead would otherwise cap the rate below the target.
    chunk = TOKENS_PER_CHUNK * CHARS_PER_TOKEN
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    per_request = tokens_per_s / candidates  # the N requests of a round stream at once
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        server.default = Reply.text(*pieces, chunk_delay_s=TOKENS_PER_CHUNK / per_request)
        gpu = FakeGpu(delay_s=0.05)  # every validation and profile keeps the judge busy for 50 ms

        async def environment(_options):
            return fake_environment(gpu)

        loop = FAST_LOOP.__class__(**{**FAST_LOOP.__dict__, "rounds": 1000, "candidates": candidates})
        options = SessionOptions("vector_add", "ollama:loop-model", loop, str(Path(tmp) / "s.db"), server.url)
        app = CudaLlmApp(
            Defaults(db=str(Path(tmp) / "s.db"), host=server.url, loop=loop),
            SessionRequest(options, auto_accept=True),
            config_path=Path(tmp) / "tui.toml",
            environment_factory=environment,
            poll_telemetry=False,
        )
        async with app.run_test(size=size) as pilot:
            deadline = time.monotonic() + 60
            while not (isinstance(app.screen, RunScreen) and any(c.reply for c in app.screen.view.candidates.values())):
                if time.monotonic() > deadline:
                    raise SystemExit("the session did not start streaming within 60 s")
                await pilot.pause(0.05)
            screen: RunScreen = app.screen  # type: ignore[assignment]

            # Every frame: when it was produced, and the state a key changes (the pane shown, or the
            # tree's cursor).
            frames: list[tuple[float, object]] = []
            real_display = app._display
            narrow = screen.layout_mode == "narrow"

            def probe() -> object:
                if narrow:
                    return screen.active_pane
                return screen.query_one("#candidates", Tree).cursor_line

            def display(target_screen, renderable) -> None:
                if renderable is not None and hasattr(renderable, "render_segments"):
                    renderable.render_segments(app.console)  # the bytes a terminal would be sent
                real_display(target_screen, renderable)
                frames.append((time.perf_counter(), probe()))

            app._display = display  # type: ignore[method-assign]
            if not narrow:
                screen.query_one("#candidates", Tree).focus()
            tokens_before = sum(len(c.reply) for c in screen.view.candidates.values())
            judged_before = sum(1 for c in screen.view.candidates.values() if c.judgement is not None)
            started = time.perf_counter()
            latencies: list[float] = []
            timeouts = 0
            driver = app._driver
            assert driver is not None
            for i in range(presses):
                if narrow:
                    key, want = str(i % 5 + 1), PANES[i % 5][0]
                    if probe() == want:  # the pane is shown already: pick the next one
                        key, want = str((i + 1) % 5 + 1), PANES[(i + 1) % 5][0]
                else:
                    key = "down" if i % 2 == 0 else "up"
                    before = probe()
                    want = None
                count = len(frames)
                t0 = time.perf_counter()
                event = events.Key(key, key if len(key) == 1 else None)
                event.set_sender(app)
                driver.send_message(event)
                seen = None
                while time.perf_counter() - t0 < 2.0:
                    await asyncio.sleep(0.0005)
                    for at, state in frames[count:]:
                        if (narrow and state == want) or (not narrow and state != before):
                            seen = at
                            break
                    if seen is not None:
                        break
                if seen is None:
                    timeouts += 1
                else:
                    latencies.append((seen - t0) * 1000)
                await asyncio.sleep(random.uniform(0.02, 0.06))
            elapsed = time.perf_counter() - started
            app._display = real_display  # type: ignore[method-assign]
            view = screen.view
            streamed = (sum(len(c.reply) for c in view.candidates.values()) - tokens_before) / CHARS_PER_TOKEN
            judged = sum(1 for c in view.candidates.values() if c.judgement is not None) - judged_before
            screen.control.stop()

    print(f"cuda-llm UI latency: key press to screen update, {size[0]}x{size[1]} ({'tabs' if narrow else 'panes'})")
    print(f"  machine: {machine()}")
    print(
        f"  load: replies stream at {tokens_per_s:.0f} tokens/s ({candidates} requests at once); "
        f"{streamed / elapsed:.0f} tokens/s on average with the pauses while candidates are judged; "
        f"{judged / elapsed:.1f} candidates judged/s (real NVRTC compiles, fake GPU at 50 ms a job)"
    )
    if latencies:
        print(
            f"  {len(latencies)} presses: median {statistics.median(latencies):.1f} ms, "
            f"p99 {percentile(latencies, 0.99):.1f} ms, max {max(latencies):.1f} ms"
            + (f", {timeouts} without an update within 2 s" if timeouts else "")
        )
    print("  target: median < 50 ms, p99 < 150 ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presses", type=int, default=200)
    p.add_argument("--tokens-per-s", type=float, default=200.0)
    p.add_argument("--candidates", type=int, default=2)
    p.add_argument("--size", default="160x48", help="terminal size, e.g. 80x24 (tabs) or 160x48 (panes)")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    asyncio.run(run(args.presses, args.tokens_per_s, (width, height), args.candidates))


if __name__ == "__main__":
    main()
