"""One real session driven through tmux as a person drives it: `cuda-llm` against a scripted model
server (the loopback server: real ollama client, real wire), the real judge (NVRTC, and the GPU
worker when there is a GPU), keys sent with send-keys and the screens read back with capture-pane.

The session, vector_add, N=2, D=3, from the start screen:
  round 1: a kernel that does not compile and a correct vectorised one; the winner is MARKED (t)
           and REJECTED with a reason (which reaches the next prompt);
  round 2: a correct kernel with 512-thread blocks; the winner is COPIED (y: an OSC 52 sequence,
           read back from the pane's raw output), SAVED (x: the files `cuda-llm export` writes,
           compared with an export of the same candidate afterwards) and DIFFED against the marked
           round-1 winner (d: verdicts, launch plans, source); then EDITED in $EDITOR (a script
           stands in for the person: 128-thread blocks), the edit goes through the three checks
           and is ACCEPTED;
  round 3: the reply is still streaming when the person QUITS (q), then `cuda-llm run --resume ID`
           RESUMES the session: the whole history must be back, and round 3 is asked again. The
           line the app leaves on the terminal after q (id, state, resume command) is reported.

With a GPU the candidates are validated and timed on it (the first run on a machine also measures
its peaks: minutes). Without one the judge is compile-only: nothing is timed, no decision is asked,
and the steps that need one are reported as not possible; `--fake-gpu` uses the fake GPU runner
instead (as the UI tests do) so that every step runs.

    python bench/tmux_session.py OUT_DIR [--tmux PATH] [--fake-gpu] [--size 160x48]

It saves what the screen showed at each step under OUT_DIR (text, at most 8 files; the saved
candidate's files in OUT_DIR/saved) and prints what each step showed; it asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import platform
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

START_S = 120.0
DECISION_S = 900.0  # the first run on a GPU measures its peaks and the reference outputs
STEP_S = 120.0
REASON = "keep 256-thread blocks; no tail loop [i] please"
# The person's editor: the launch plan's 512-thread blocks (and the grid that goes with them) made
# 128-thread ones. Only the plan holds "512".
EDITOR = """\
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("512", "128"))
"""


class Screens:
    """The screens of each step, a file a step (a few captures each), at most 8 files."""

    def __init__(self, out: Path, tmux) -> None:
        self.out = out
        self.tmux = tmux
        self.files: list[Path] = []
        out.mkdir(parents=True, exist_ok=True)

    def save(self, step: str, *captions: tuple[str, str]) -> None:
        path = self.out / f"{len(self.files) + 1}-{step}.txt"
        text = "".join(f"==== {caption}\n{screen.rstrip()}\n\n" for caption, screen in captions)
        path.write_text(text, encoding="utf-8")
        self.files.append(path)

    def now(self, caption: str) -> tuple[str, str]:
        return caption, self.tmux.screen()


def find(screen: str, pattern: str) -> str:
    m = re.search(pattern, screen)
    return m.group(0) if m else "(not on the screen)"


def latency_lines(screen: str) -> list[str]:
    """The latency pane's figures, as the 80x24 layout shows them (tab 5)."""
    lines = [ln.strip() for ln in screen.splitlines()[3:]]
    return [ln for ln in lines if ln.startswith(("best", "baseline", "library", "no timings", "compile-only"))]


def osc52(raw: Path) -> str | None:
    """The text of the last OSC 52 copy the app wrote to its terminal, if any."""
    data = raw.read_bytes() if raw.exists() else b""
    found = re.findall(rb"\x1b\]52;c;([A-Za-z0-9+/=]*)(?:\x07|\x1b\\\\)", data)
    return base64.b64decode(found[-1]).decode("utf-8", "replace") if found else None


def same_as_export(saved: Path, db: Path, session_id: int, label: str, tmp: Path) -> str:
    """Whether the files the TUI saved are those `cuda-llm export` writes for the same candidate
    (byte for byte, but for the folder each names in its re-judge command)."""
    import subprocess

    out = tmp / "export"
    argv = [sys.executable, "-m", "cuda_llm", "export", str(session_id), "--candidate", label]
    argv += ["--out", str(out), "--db", str(db)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    if done.returncode != 0:
        return f"export failed: {done.stderr.strip().splitlines()[-1:]}"
    names = sorted(p.name for p in saved.iterdir()) if saved.is_dir() else []
    differ = [
        n
        for n in names
        if (saved / n).read_bytes().replace(str(saved).encode(), str(out).encode()) != (out / n).read_bytes()
    ]
    return f"{', '.join(names) or 'nothing saved'}: " + (
        f"differ from the export: {differ}" if differ else "identical to the export"
    )


def narrow_panes(tmux, size: tuple[int, int]) -> tuple[str, str]:
    """The candidates and the latency pane, each on the whole screen: at 80x24, tabs 6 and 5."""
    from tui.tmux_driver import laid_out_for

    tmux.resize(80, 24)
    tmux.wait_for(["1 Prompt"], STEP_S, "the narrow layout")
    tmux.keys("6")
    time.sleep(1.0)
    tree = tmux.screen()
    tmux.keys("5")
    time.sleep(1.0)
    latency = tmux.screen()
    tmux.resize(*size)
    tmux.wait_until(lambda s: laid_out_for(s, size), STEP_S, f"the layout for {size}")
    return tree, latency


def run(out: Path, tmux_path: str | None, fake_gpu: bool, size: tuple[int, int], decision_s: float) -> None:
    from llm_servers import LoopbackLLMServer, Reply
    from scripted import BROKEN_KERNEL, GOOD_KERNEL, GOOD_PLAN, reply
    from tui.helpers import request_key
    from tui.tmux_driver import Tmux, app_command

    from cuda_llm.engine.store.sessions import SessionStore

    def streamed(text: str, delay: float = 0.01) -> Reply:
        return Reply.text(*[text[i : i + 16] for i in range(0, len(text), 16)], chunk_delay_s=delay)

    good = reply(GOOD_KERNEL, GOOD_PLAN, "Four elements per thread with float4 loads; a scalar tail.")
    wider = reply(
        GOOD_KERNEL,
        {"launches": [dict(GOOD_PLAN["launches"][0], grid=["cdiv(cdiv(n, 4), 512)"], block=[512])]},
        "The same kernel with 512-thread blocks.",
    )
    asked: dict[tuple[int, int, int], int] = {}

    def respond(rec) -> Reply:
        key = request_key(rec)
        asked[key] = asked.get(key, 0) + 1
        if key[0] == 1:
            return streamed(reply(BROKEN_KERNEL, GOOD_PLAN, "Vectorised, with a typo.") if key[2] == 0 else good)
        if key[0] == 3 and asked[key] == 1:
            return Reply.stall_mid(60.0, *[good[i : i + 16] for i in range(0, len(good), 16)], at=3)
        return streamed(wider)

    report: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLMServer() as server:
        server.default = respond
        db = Path(tmp) / "sessions.db"
        editor = Path(tmp) / "editor.py"
        editor.write_text(EDITOR)
        env = {
            "CUDA_LLM_HOME": str(Path(tmp) / "home"),
            "OLLAMA_HOST": server.url,
            "EDITOR": f"{shlex.quote(sys.executable)} {shlex.quote(str(editor))}",
        }
        gpu_args = ["--fake-gpu"] if fake_gpu else []
        # --seed 0: each request carries its (round, attempt, slot) in its seed, so the scripted
        # server answers each one as planned whatever order they arrive in.
        args = [*gpu_args, "--model", "ollama:loop-model", "-N", "2", "-D", "3", "-R", "1", "-K", "0", "--seed", "0"]
        args += ["--target-roofline", "0", "--db", str(db)]
        tmux = Tmux("session", tmux_path)
        screens = Screens(out, tmux)
        raw = Path(tmp) / "pane.raw"  # everything the app wrote to its terminal (OSC 52 included)
        saved = out / "saved"
        saved_label = ""
        try:
            tmux.start(app_command(args, env), size)
            tmux.pipe(raw)
            # "filter tasks", not a task's name: on a small screen vector_add lies below the list's end.
            tmux.wait_for(["New session", "filter tasks"], START_S, "the start screen")
            time.sleep(1.0)  # keys sent before the app reads them are lost
            tmux.keys("/")
            tmux.text("vector_add")
            tmux.keys("Enter")
            tmux.wait_for(["Element-wise sum"], STEP_S, "vector_add's summary")
            start = tmux.screen()
            tmux.keys("s")
            first = tmux.wait_until(
                lambda s: "◆ r1-" in s or "round 2" in s or "■ finished" in s or "✗ failed" in s,
                decision_s,
                "round 1's decision",
            )
            device = find(first, r"(compile-only \(sm_\d+\)|Fake H100 \(sm_\d+\)|NVIDIA[^·\n]*?\(sm_\d+\))")
            screens.save("start-and-round-1", ("the start screen, vector_add chosen", start), ("round 1", first))
            compile_only = "compile-only" in device
            report.append(f"judge: {device}")
            if compile_only:
                report.append("compile-only: nothing is timed, so no decision is asked (reject, edit, accept skipped)")
                step, before = "round-3", []
            else:
                # Round 1: reject the winner, with a reason.
                winner = find(first, r"◆ (r1-\S+)").removeprefix("◆ ")
                tmux.keys("t")  # marked: round 2's winner is compared with it
                tmux.wait_for([f"{winner}", "◆ marked"], STEP_S, "the mark")
                tmux.keys("r")
                tmux.wait_for(["Reject r1-"], STEP_S, "the reason dialog")
                tmux.text(REASON)
                dialog = tmux.screen()
                tmux.keys("Enter")
                second = tmux.wait_until(lambda s: "◆ r2-" in s, decision_s, "round 2's decision")
                screens.save("reject", ("the reason typed", dialog), ("round 2's decision", second))
                report.append(f"round 1: {winner} marked, then rejected with a reason: {REASON!r}")
                # Round 2's winner: copy it, save it, compare it with the marked one.
                saved_label = find(second, r"◆ (r2-\S+)").removeprefix("◆ ")
                tmux.keys("y")
                copied = tmux.wait_for([f"copied {saved_label}"], STEP_S, "the copy, said")
                deadline = time.monotonic() + 10
                while osc52(raw) is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                text = osc52(raw) or ""
                report.append(
                    f"copy (y): OSC 52 in the pane's raw output: {bool(text)}; "
                    f"{len(text.splitlines())} lines, the kernel: {'__global__' in text}"
                )
                tmux.keys("x")
                tmux.wait_for([f"Save {saved_label}"], STEP_S, "the folder asked")
                for attempt in range(3):  # keys sent before the dialog has the focus are lost: again
                    time.sleep(1.0)
                    tmux.keys("C-u")
                    tmux.text(str(saved))
                    try:
                        tmux.wait_for([str(saved)], 5, "the folder typed")
                        break
                    except AssertionError:
                        if attempt == 2:
                            raise
                tmux.keys("Enter")
                said = tmux.wait_for([f"saved {saved_label}"], STEP_S, "the save, said")
                # Exported now, while the round waits for its decision: the same session state.
                sid = int(find(said, r"session \d+").removeprefix("session ") or 0)
                same = same_as_export(saved, db, sid, saved_label, Path(tmp))
                report.append(f"save (x) of {saved_label}: {same}")
                tmux.keys("d")
                compared = tmux.wait_for(
                    [f"{saved_label} compared with {winner}", "launch plan", "source"], STEP_S, "the diff"
                )
                tmux.keys("Escape")
                tmux.wait_for([f"◆ {saved_label}"], STEP_S, "the run screen again")
                screens.save("copy-save-diff", ("after y", copied), ("after x", said), ("d: the comparison", compared))
                latency = " ".join(find(compared, r"latency .*").split())
                report.append(f"diff (d): {saved_label} against the marked {winner}: {latency}")
                # Round 2: edit the winner in $EDITOR; the edit is judged and waits; accept it.
                tmux.keys("e")
                edited = tmux.wait_until(lambda s: "◆ r2-edit1" in s, decision_s, "the edited kernel's decision")
                tmux.keys("2")  # the kernel pane: the edit's source, plan and diffs
                time.sleep(1.0)
                kernel = tmux.screen()
                tmux.keys("a")
                report.append("round 2: r2-edit1 (the winner with 128-thread blocks, from $EDITOR) judged and accepted")
                step, before = "edit-and-accept", [("the edit judged, waiting", edited), ("the kernel pane", kernel)]
            third = tmux.wait_until(lambda s: "r3-" in s and "streaming" in s, decision_s, "round 3 streaming")
            tree, latency = narrow_panes(tmux, size)
            screens.save(
                step, *before, ("round 3 streaming", third), ("the candidates", tree), ("the latency pane", latency)
            )
            report.append("latency pane: " + " | ".join(latency_lines(latency)))
            # Quit mid-stream (round 3), then resume.
            tmux.keys("q")
            stopping = tmux.wait_until(lambda s: "stopping" in s or tmux.dead(), STEP_S, "the stop, said at once")
            tmux.wait_until(lambda _s: tmux.dead(), STEP_S, "the app to quit")
            after = tmux.run("capture-pane", "-p", "-J", "-S", "-100", "-t", tmux.target)
            report.append("the line left after q: " + find(after, r"cuda-llm: session \d+ .*"))
            store = SessionStore(db)
            try:
                record = store.sessions()[0]
                session_id, status = record.id, record.status
            finally:
                store.close()
            screens.save("quit", ("just after q", stopping))
            report.append(f"quit during round 3: session {session_id} recorded as {status!r}")
            tmux.kill()
            tmux = Tmux("resumed", tmux_path)
            screens.tmux = tmux
            tmux.start(app_command([*gpu_args, "run", "--resume", str(session_id), "--db", str(db)], env), size)
            resumed = tmux.wait_until(lambda s: "round 3" in s and "r1-" in s, decision_s, "the resumed history")
            tree, latency = narrow_panes(tmux, size)
            ended = tmux.wait_until(lambda s: "■ finished" in s or "◆ r3-" in s, decision_s, "round 3 again")
            screens.save(
                "resumed",
                ("the resumed session", resumed),
                ("its candidates at 80x24", tree),
                ("its latency pane", latency),
                ("round 3 asked again", ended),
            )
            history = [ln.strip() for ln in tree.splitlines() if re.match(r"^\s*[├└│▼]", ln)]
            report.append("resumed history: " + " | ".join(h for h in history if h))
            report.append("resumed latency pane: " + " | ".join(latency_lines(latency)))
            report.append(f"round 3 asked again after the resume: {asked.get((3, 0, 0), 0)} requests in all")
            tmux.keys("s")
            time.sleep(2.0)
            tmux.keys("q")
            tmux.wait_until(lambda _s: tmux.dead(), STEP_S, "the app to quit")
        except AssertionError as exc:  # a step never came: keep its screen and what came before it
            screens.save("stuck", (str(exc).splitlines()[0], tmux.screen()))
            print(f"cuda-llm through tmux: {platform.node()}: STOPPED at a step that never came", file=sys.stderr)
            for line in report:
                print(f"  {line}", file=sys.stderr)
            print(f"  {str(exc).splitlines()[0]}; its screen: {screens.files[-1]}", file=sys.stderr)
            raise SystemExit(1) from None
        finally:
            tmux.kill()
        store = SessionStore(db)
        try:
            record = store.sessions()[0]
            verdicts = []
            for c in store.candidates(record.id):
                j = c.judgement
                timing = f" {j.timing.median_us:.1f} us" if j is not None and j.timing is not None else ""
                why = f": {c.decision_reason}" if c.decision_reason else ""
                decision = f" ({c.decision}{why})" if c.decision else ""
                verdicts.append(f"{c.label} {j.status if j else 'no verdict'}{timing}{decision}")
            prompts = [" ".join(m.content for m in (store.prompt(record.id, r, 0) or [])) for r in (2, 3)]
            final = f"session {record.id}: {record.status} ({record.status_message}); best {record.best_label}"
        finally:
            store.close()
    print(f"cuda-llm through tmux: {platform.node()}, Python {platform.python_version()}")
    for line in report:
        print(f"  {line}")
    print("  verdicts: " + "; ".join(verdicts))
    if any(REASON in v for v in verdicts):
        print(f"  the rejection's reason in the next prompt: {any(REASON in p for p in prompts)}")
    print(f"  {final}")
    print(f"  screens: {', '.join(str(f) for f in screens.files)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="where the screens are saved (text files, at most 8)")
    p.add_argument("--tmux", help="the tmux binary (default: tmux on PATH)")
    p.add_argument("--fake-gpu", action="store_true", help="without a GPU: judge with the fake GPU runner")
    p.add_argument("--size", default="160x48", help="the terminal size (default 160x48: the panes side by side)")
    p.add_argument(
        "--step-timeout",
        type=float,
        default=DECISION_S,
        help=f"seconds to wait for a decision (default {DECISION_S:.0f})",
    )
    args = p.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    run(args.out, args.tmux, args.fake_gpu, (width, height), args.step_timeout)


if __name__ == "__main__":
    main()
