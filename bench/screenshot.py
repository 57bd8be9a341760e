"""An SVG of the run screen in the middle of a real session (for the README).

The session is real: the loopback model server (real ollama client, real wire) streams scripted
replies (a kernel that does not compile, then correct vectorised ones), and the judge is the real
one: NVRTC compiles for the GPU, and the GPU worker validates and times on the GPU when one is
present (compile-only otherwise). NVML telemetry is read as usual. At the chosen moment the screen
is saved with Textual's screenshot feature, the session is stopped, and the script exits.

    python bench/screenshot.py docs/run-screen.svg                   # at the first decision
    python bench/screenshot.py out.svg --at finished --size 200x60 --theme cuda-light
    python bench/screenshot.py out.svg --at seconds:4                # mid-stream

It prints where it ran and what it saved; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

TIMEOUT_S = 600.0  # the first run on a GPU measures its peaks and computes reference outputs


def moment_reached(at: str, screen, started: float) -> bool:
    view = screen.view
    if at == "awaiting":
        return view.awaiting is not None or not view.running
    if at == "finished":
        return not view.running
    if at.startswith("seconds:"):
        return time.monotonic() - started >= float(at.partition(":")[2])
    if at.startswith("round:"):
        return view.round >= int(at.partition(":")[2]) or not view.running
    raise SystemExit(f"--at must be awaiting, finished, seconds:S or round:N (got {at!r})")


async def run(out: Path, at: str, size: tuple[int, int], theme: str, rounds: int, compile_only: bool) -> None:
    from llm_servers import LoopbackLLMServer, Reply
    from scripted import BROKEN_KERNEL, GOOD_KERNEL, GOOD_PLAN, reply
    from tui.helpers import FAST_LOOP, by_request

    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.options import Defaults, SessionRequest
    from cuda_llm.app.screens.run import RunScreen
    from cuda_llm.engine.fsr.session import SessionOptions

    def streamed(text: str) -> Reply:
        # ~100 tokens/s per request: the prompt pane shows the reply arriving, as with a local model.
        return Reply.text(*[text[i : i + 8] for i in range(0, len(text), 8)], chunk_delay_s=0.02)

    good = reply(GOOD_KERNEL, GOOD_PLAN, "Four elements per thread with float4 loads; a scalar tail.")
    grid = dict(GOOD_PLAN["launches"][0], grid=["cdiv(cdiv(n, 4), 512)"], block=[512])
    wider = reply(GOOD_KERNEL, {"launches": [grid]}, "The same kernel with 512-thread blocks.")
    table = {
        (1, 0, 0): streamed(reply(BROKEN_KERNEL, GOOD_PLAN, "Vectorised, with a typo.")),
        (1, 0, 1): streamed(good),
    }
    loop = dataclasses.replace(FAST_LOOP, candidates=2, rounds=rounds, repairs=1)
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        server.default = by_request(table, default=streamed(wider))
        db = str(Path(tmp) / "sessions.db")
        options = SessionOptions(
            "vector_add", "ollama:qwen2.5-coder:32b", loop, db, server.url, compile_only=compile_only
        )
        app = CudaLlmApp(
            Defaults(db=db, host=server.url, compile_only=compile_only, loop=loop),
            SessionRequest(options, auto_accept=at != "awaiting"),
            config_path=Path(tmp) / "tui.toml",
            config_overrides={"theme": theme},
        )
        async with app.run_test(size=size) as pilot:
            started = time.monotonic()
            while not isinstance(app.screen, RunScreen) or not moment_reached(at, app.screen, started):
                if time.monotonic() - started > TIMEOUT_S:
                    raise SystemExit(f"the moment {at!r} did not come within {TIMEOUT_S:.0f} s")
                await pilot.pause(0.1)
            await pilot.pause(0.5)  # let the last events and a telemetry sample reach the panes
            screen: RunScreen = app.screen  # type: ignore[assignment]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(app.export_screenshot(title="cuda-llm"), encoding="utf-8")
            view = screen.view
            print(f"saved {out} ({size[0]}x{size[1]}, {theme}) at {at!r}: {view.device}; state {view.state}")
            if view.error:
                print(f"  the session said: {view.error}")
            await screen.shutdown(grace_s=5.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="where to write the SVG")
    p.add_argument("--at", default="awaiting", help="awaiting (default), finished, seconds:S or round:N")
    p.add_argument("--size", default="160x48", help="terminal size (default 160x48)")
    p.add_argument("--theme", default="cuda-dark", help="cuda-dark, cuda-light or cuda-contrast")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--compile-only", action="store_true", help="do not use the GPU even if there is one")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    asyncio.run(run(args.out, args.at, (width, height), args.theme, args.rounds, args.compile_only))


if __name__ == "__main__":
    main()
