"""How quickly the run screen is drawn in full after the terminal is resized, while a reply streams.

The app runs headless (Textual's test driver) against the loopback model server (real ollama client,
real wire) with the fake GPU runner, streaming replies at ~200 tokens/s. The terminal is resized
from size to size (80x24, 120x40, 200x60, 250x70, each reached from each of the others); a resize
counts as drawn in full at the first frame, at the new size, in which every pane has been laid out
and re-wrapped for it (the bytes a terminal would be sent are built, then dropped). Run it idle and
with background load (`--busy 2` starts two `yes > /dev/null` processes for the run, as a machine
doing other work would have).

    python bench/relayout.py [--rounds 10] [--busy 2] [--profile out.prof]

It prints the median and p95 for each size, how many resizes began while a reply streamed, where it
was measured and the load average before and after; it asserts nothing. Target:
median under 250 ms and p95 under 600 ms at every size on a 2-core machine with two busy processes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

from ui_latency import CHARS_PER_TOKEN, TOKENS_PER_CHUNK, machine, percentile  # noqa: E402

SIZES = ((80, 24), (120, 40), (200, 60), (250, 70))
SETTLE_TIMEOUT_S = 10.0


def settled(screen, size: tuple[int, int]) -> bool:
    """Every pane laid out at this terminal size, the wrapped ones wrapped for their new width (the
    panes by reference: a query per frame would slow down what it measures)."""
    app = screen.app
    if tuple(app.size) != size or tuple(screen.size) != size:
        return False
    prompt, log = screen.panes["prompt-pane"], screen.panes["event-log"]
    prompt_log = prompt.children[1]
    if prompt.display and prompt.size.width and prompt._width != prompt_log.size.width:
        return False
    return not (log.display and log.size.width and log.wrap and log._wrap != log._width_now())


async def run(rounds: int, tokens_per_s: float) -> tuple[dict[tuple[int, int], list[float]], int]:
    """The milliseconds each resize took to be drawn in full, by size; and how many of the resizes
    began while a reply was streaming (the rest fell in the gap while a reply is judged)."""
    from fakes.fake_gpu import FakeGpu, fake_environment
    from llm_servers import LoopbackLLMServer, Reply
    from tui.helpers import FAST_LOOP, reply_for

    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.options import Defaults, SessionRequest
    from cuda_llm.app.screens.run import RunScreen
    from cuda_llm.engine.fsr.session import SessionOptions

    text = reply_for("vadd_us40", note="Vectorised loads, one float4 per thread. " * 40)  # a long reply
    chunk = TOKENS_PER_CHUNK * CHARS_PER_TOKEN
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    candidates = 2
    per_request = tokens_per_s / candidates
    results: dict[tuple[int, int], list[float]] = {s: [] for s in SIZES}
    streaming = 0
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        server.default = Reply.text(*pieces, chunk_delay_s=TOKENS_PER_CHUNK / per_request)
        gpu = FakeGpu(delay_s=0.05)

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
        async with app.run_test(size=SIZES[0]) as pilot:
            deadline = time.monotonic() + 60
            while not (isinstance(app.screen, RunScreen) and any(c.reply for c in app.screen.view.candidates.values())):
                if time.monotonic() > deadline:
                    raise SystemExit("the session did not start streaming within 60 s")
                await pilot.pause(0.05)
            screen: RunScreen = app.screen  # type: ignore[assignment]
            frames: list[tuple[float, bool]] = []
            real_display = app._display
            target: list[tuple[int, int]] = [SIZES[0]]

            def display(target_screen, renderable) -> None:
                if renderable is not None and hasattr(renderable, "render_segments"):
                    renderable.render_segments(app.console)  # the bytes a terminal would be sent
                real_display(target_screen, renderable)
                frames.append((time.perf_counter(), settled(screen, target[0])))

            app._display = display  # type: ignore[method-assign]
            order = [(a, b) for a in SIZES for b in SIZES if a != b]
            current = SIZES[0]
            for _ in range(rounds):
                for before, after in order:
                    if current != before:
                        target[0] = before
                        await pilot.resize_terminal(*before)
                        await pilot.pause(0.3)
                    target[0] = after
                    count = len(frames)
                    streaming += any(c.phase == "streaming" for c in screen.view.candidates.values())
                    t0 = time.perf_counter()
                    await pilot.resize_terminal(*after)
                    seen = None
                    while time.perf_counter() - t0 < SETTLE_TIMEOUT_S:
                        await asyncio.sleep(0.001)
                        seen = next((at for at, ok in frames[count:] if ok), None)
                        if seen is not None:
                            break
                    current = after
                    if seen is not None:
                        results[after].append((seen - t0) * 1000)
                    await pilot.pause(0.2)
            app._display = real_display  # type: ignore[method-assign]
            screen.control.stop()
    return results, streaming


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="each size is reached from each other size this often")
    p.add_argument("--busy", type=int, default=0, help="background `yes > /dev/null` processes during the run")
    p.add_argument("--tokens-per-s", type=float, default=200.0)
    p.add_argument("--profile", help="write a cProfile of the run to this file")
    args = p.parse_args()
    load_before = os.getloadavg()
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
    try:
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            results, streaming = profiler.runcall(asyncio.run, run(args.rounds, args.tokens_per_s))
            profiler.dump_stats(args.profile)
        else:
            results, streaming = asyncio.run(run(args.rounds, args.tokens_per_s))
    finally:
        for proc in busy:
            proc.terminate()
            proc.wait()
    print(
        f"cuda-llm relayout: resize to the run screen drawn in full, while replies stream ({args.busy} busy processes)"
    )
    print(f"  machine: {machine()}")
    load_after = os.getloadavg()
    print(
        "  load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    total = args.rounds * len(SIZES) * (len(SIZES) - 1)
    print(f"  {streaming} of {total} resizes began while a reply was streaming (the others, while one was judged)")
    for size, times in results.items():
        if times:
            print(
                f"  {size[0]}x{size[1]}: {len(times)} resizes, median {statistics.median(times):.0f} ms, "
                f"p95 {percentile(times, 0.95):.0f} ms, max {max(times):.0f} ms"
            )
        else:
            print(f"  {size[0]}x{size[1]}: no resize settled within {SETTLE_TIMEOUT_S:.0f} s")
    print("  target: median < 250 ms, p95 < 600 ms at every size")


if __name__ == "__main__":
    main()
