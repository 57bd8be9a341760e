"""The TUI under a long, hostile session in a real terminal: `cuda-llm` in tmux against the loopback
model server (real ollama client, real wire), compile-only, its window resized through 80x24 ->
200x60 -> 120x40 -> 80x24 over and over while replies stream and the telemetry bar changes every
second, with a split pane zoomed in and out now and then, for ten minutes.

It counts crashes (the app gone, or a traceback on the screen; the app is then resumed and the soak
goes on) and measures, from outside, as a person would feel it:
  - key latency: from `tmux send-keys` until `capture-pane` shows the key's effect (the help
    opening on `?`, closing on Esc), polled as fast as tmux answers (a few ms a look);
  - resize latency: from `resize-window` until the app has laid itself out for the new size.

    python bench/tui_soak.py [--minutes 10] [--tmux PATH] [--fake-gpu] [--out DIR]

It prints figures and where they ran; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench.ui_latency import machine, percentile  # noqa: E402

SIZES = ((200, 60), (120, 40), (80, 24))
LAYOUT_S = 30.0  # longer than this to lay out a size counts as a hang (and is reported)
KEY_S = 10.0
START_S = 90.0
ZOOM_EVERY = 10  # cycles
CHUNK_DELAY_S = 0.02  # ~2 s a reply: something is always streaming


def summary(values: list[float]) -> str:
    if not values:
        return "none measured"
    return (
        f"median {statistics.median(values):.0f} ms, p95 {percentile(values, 0.95):.0f} ms, "
        f"max {max(values):.0f} ms ({len(values)})"
    )


def rss_kib(pane_pid: int) -> int | None:
    """The app's resident memory: the largest process under the pane (the shell is tiny; the
    compiler pool's processes are the app's too, but they are not the UI)."""
    found = []
    todo = [str(pane_pid)]
    while todo:
        pid = todo.pop()
        try:
            todo += Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            status = Path(f"/proc/{pid}/status").read_text()
            found.append(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))))
        except (OSError, StopIteration, ValueError):
            continue
    return max(found, default=None)


def timed(tmux, keys: list[str], ok) -> float | None:
    """Milliseconds from sending the keys until the screen satisfies `ok`, looked at as fast as
    tmux answers; None if it never does within KEY_S."""
    t0 = time.perf_counter()
    tmux.keys(*keys)
    while time.perf_counter() - t0 < KEY_S:
        if ok(tmux.screen()):
            return (time.perf_counter() - t0) * 1000
    return None


# What a key shows at 80x24: the log pane (7) and the candidates pane (6) are told apart by their
# lines; the help by its title.
def shows_log(screen: str) -> bool:
    return "asking for" in screen and "▼ round" not in screen


def shows_candidates(screen: str) -> bool:
    return "▼ round" in screen and "asking for" not in screen


def shows_help(screen: str) -> bool:
    return "Run screen keys" in screen


def run(minutes: float, tmux_path: str | None, fake_gpu: bool, out: Path) -> dict:
    from llm_servers import LoopbackLLMServer, Reply
    from scripted import BROKEN_KERNEL, reply
    from tui.helpers import reply_for
    from tui.tmux_driver import Tmux, app_command, laid_out_for

    from cuda_llm.engine.store.sessions import SessionStore

    good = reply_for("vadd4", "Four floats a thread. " * 6)
    bad = reply(BROKEN_KERNEL)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        asked = []

        def slowly(rec) -> Reply:
            asked.append(rec)
            text = bad if len(asked) % 3 == 0 else good
            return Reply.text(*[text[i : i + 12] for i in range(0, len(text), 12)], chunk_delay_s=CHUNK_DELAY_S)

        server.default = slowly
        db = Path(tmp) / "sessions.db"
        env = {"CUDA_LLM_HOME": str(Path(tmp) / "home"), "OLLAMA_HOST": server.url}
        first = ["run", "vector_add", "--model", "ollama:loop-model", "--arch", "sm_90", "-N", "2"]
        first += ["-D", "1000000", "-K", "0", "--target-roofline", "0", "--db", str(db)]
        if fake_gpu:
            first.insert(0, "--fake-gpu")
        else:
            first.append("--compile-only")
        tmux = Tmux("soak", tmux_path)
        crashes: list[str] = []
        keys_ms: dict[str, list[float]] = {"pane": [], "help": [], "close": []}
        layout_ms: list[float] = []
        hangs = 0
        cycles = zooms = 0
        rss: list[int] = []
        try:
            tmux.start(app_command(first, env), (80, 24))
            tmux.wait_for(["streaming"], START_S, "the first reply streaming")
            started = time.monotonic()
            rss_first = rss_kib(tmux.pid())
            while time.monotonic() - started < minutes * 60:
                for size in SIZES:
                    t0 = time.perf_counter()
                    tmux.resize(*size)
                    try:
                        tmux.wait_until(lambda s, size=size: laid_out_for(s, size), LAYOUT_S, f"the layout for {size}")
                        layout_ms.append((time.perf_counter() - t0) * 1000)
                    except AssertionError:
                        hangs += 1
                # At 80x24 (the last size): two panes, then the help opened and closed.
                for kind, key, ok in (
                    ("pane", "7", shows_log),
                    ("pane", "6", shows_candidates),
                    ("help", "?", shows_help),
                    ("close", "Escape", lambda s: not shows_help(s)),
                ):
                    ms = timed(tmux, [key], ok)
                    if ms is None:
                        hangs += 1
                    else:
                        keys_ms[kind].append(ms)
                cycles += 1
                if cycles % ZOOM_EVERY == 0:
                    tmux.zoom()
                    zooms += 1
                    mem = rss_kib(tmux.pid())
                    if mem:
                        rss.append(mem)
                screen = tmux.screen()
                if tmux.dead() or "Traceback" in screen:
                    crashes.append(screen)
                    (out / f"crash-{len(crashes)}.txt").write_text(screen)
                    store = SessionStore(db)
                    try:
                        sid = store.sessions()[0].id
                    finally:
                        store.close()
                    tmux.kill()
                    tmux = Tmux(f"soak{len(crashes)}", tmux_path)
                    resume = ["run", "--resume", str(sid), "--db", str(db)]
                    tmux.start(app_command(["--fake-gpu", *resume] if fake_gpu else resume, env), (80, 24))
                    tmux.wait_for(["streaming"], START_S, "the resumed session streaming")
            elapsed = time.monotonic() - started
            (out / "last-screen.txt").write_text(tmux.screen())
            tmux.keys("q")
            tmux.wait_until(lambda _s: tmux.dead(), 30, "the app to quit")
        finally:
            tmux.kill()
        store = SessionStore(db)
        try:
            record = store.sessions()[0]
            rounds = len(store.rounds(record.id))
            candidates = len(store.candidates(record.id))
            status = record.status
        finally:
            store.close()
    return {
        "machine": machine(),
        "minutes": round(elapsed / 60, 1),
        "cycles": cycles,
        "resizes": cycles * len(SIZES),
        "zooms": zooms,
        "crashes": len(crashes),
        "hangs": hangs,
        "key_ms": keys_ms,
        "layout_ms": layout_ms,
        "rounds": rounds,
        "candidates": candidates,
        "requests": len(asked),
        "status_after_quit": status,
        "rss_kib": [rss_first, *rss],
        "judge": "the fake GPU" if fake_gpu else "compile-only",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--tmux", help="the tmux binary (default: tmux on PATH)")
    p.add_argument("--fake-gpu", action="store_true", help="judge with the fake GPU runner (decisions, timings)")
    p.add_argument("--out", type=Path, default=Path("soak-out"), help="where a crash's screen is saved")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = p.parse_args()
    r = run(args.minutes, args.tmux, args.fake_gpu, args.out)
    mem = [m for m in r["rss_kib"] if m]
    print(f"cuda-llm TUI soak: {r['minutes']} min in tmux, loopback model server, {r['judge']}")
    print(f"  machine: {r['machine']}")
    print(
        f"  load: {r['cycles']} cycles of 80x24 -> 200x60 -> 120x40 -> 80x24 ({r['resizes']} resizes), "
        f"{r['zooms']} zooms of a split pane; {r['requests']} replies streamed (~2 s each, two at a time), "
        f"{r['rounds']} rounds, {r['candidates']} candidates; telemetry changing every second"
    )
    print(f"  crashes: {r['crashes']}; sizes or keys not shown within {LAYOUT_S:.0f}/{KEY_S:.0f} s: {r['hangs']}")
    print("  key latency, from send-keys until capture-pane shows the effect (a capture takes a few ms):")
    print(f"    a digit showing another pane: {summary(r['key_ms']['pane'])}")
    print(f"    ? opening the help: {summary(r['key_ms']['help'])}")
    print(f"    Esc closing it: {summary(r['key_ms']['close'])}")
    print(f"  resize to the new layout on screen: {summary(r['layout_ms'])}")
    if mem:
        print(f"  app memory (RSS): {mem[0] / 1024:.0f} MiB after start, {mem[-1] / 1024:.0f} MiB at the end")
    print(f"  the session after q: {r['status_after_quit']}")
    if args.json:
        print(json.dumps({k: v for k, v in r.items() if k not in ("key_ms", "layout_ms")}))


if __name__ == "__main__":
    main()
