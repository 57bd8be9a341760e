"""Editing a kernel in the person's own editor ($VISUAL or $EDITOR).

The kernel and its launch plan go into one file in the reply format (a ```cuda block and a ```json
block), with what went wrong with the kernel it starts from written above them. The app steps
aside (Textual's App.suspend) while the editor runs in a thread, so the session goes on meanwhile;
what is saved is read back and checked as a model's reply is. Without $VISUAL or $EDITOR the
built-in editor (screens/modals.py) is used.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SuspendNotSupported

from cuda_llm.app.state import CandidateView
from cuda_llm.engine.contract.reply import parse_reply
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.llm.base import RequestKey

if TYPE_CHECKING:  # a type only: app/drafts.py writes a draft with compose_reply from here
    from cuda_llm.app.drafts import Draft

# Lines of a failure shown beside the kernel: the first diagnostics or mismatches say what to fix.
FAILURE_LINES = 20
MISMATCH_LINES = 8


@dataclass(frozen=True)
class EditRequest:
    title: str  # "Edit r1-2", "Write r1-fix1-1 (round 1, a repair of r1-1)"
    source: str
    plan: str  # JSON
    errors: str = ""  # what went wrong with the kernel it starts from
    based_on: str | None = None  # the candidate an edit starts from
    manual_key: RequestKey | None = None  # manual mode: the request this kernel answers
    draft: Draft | None = None  # an edit kept from before (app/drafts.py): forgotten once submitted


@dataclass(frozen=True)
class EditResult:
    source: str
    plan_json: str
    keep_only: bool = False  # the app is quitting: keep the edit as a draft (app/drafts.py), submit nothing


def compose_reply(source: str, plan_json: str, note: str = "Written in the editor.") -> str:
    """A reply in the candidate contract's format, from what the person wrote."""
    return f"{note}\n\n```cuda\n{source.rstrip()}\n```\n\n```json\n{plan_json.strip()}\n```\n"


def editor_command(environ: dict[str, str] | None = None) -> list[str] | None:
    """$VISUAL, else $EDITOR, split as a shell would ("code --wait"); None when neither is set."""
    env = os.environ if environ is None else environ
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return [value]
    return None


def failure_text(c: CandidateView | None) -> str:
    """What went wrong with a candidate, in the words of the judge: for the editor's side pane."""
    if c is None:
        return ""
    j = c.judgement
    if j is None:
        return f"{c.label}: no reply: {c.error}" if c.error else ""
    lines = [f"{j.label}: {j.status.replace('_', ' ')}: {j.message}"]
    if j.compile is not None and j.compile.diagnostics:
        lines += [
            f"  line {d.line}: {d.severity}: {d.message}" if d.line else f"  {d.severity}: {d.message}"
            for d in j.compile.diagnostics[:FAILURE_LINES]
        ]
    elif j.validation is not None:
        lines.append(f"  {j.validation.summary}")
        lines += [f"  pattern: {p}" for p in j.validation.patterns]
        lines += [
            f"  {m.case} {m.output}{list(m.index)}: expected {m.expected:.6g}, got {m.got:.6g}"
            for m in j.validation.mismatches[:MISMATCH_LINES]
        ]
    elif j.detail:
        lines += ["  " + line for line in j.detail.splitlines()[:FAILURE_LINES]]
    return "\n".join(lines)


def _header(request: EditRequest) -> str:
    lines = [
        f"{request.title}. Edit the cuda block and the json launch plan below; save and quit to submit it,",
        "quit without saving to cancel. Text outside the two blocks is ignored.",
    ]
    if request.errors:
        lines += ["", "What went wrong with the kernel you start from:", request.errors]
    # A fence in the notes would start a code block of its own.
    return "\n".join(lines).replace("```", "'''")


def _run(argv: list[str], terminal: bool) -> int:
    stdin = None if terminal else subprocess.DEVNULL
    return subprocess.run(argv, check=False, stdin=stdin).returncode


async def edit_externally(app: App, command: list[str], request: EditRequest) -> EditResult | str | None:
    """Run the editor on the kernel; an EditResult when something usable was saved, None when the
    person left it unchanged, or one line saying why nothing can be submitted."""
    text = compose_reply(request.source, request.plan, note=_header(request))
    with tempfile.TemporaryDirectory(prefix="cuda-llm-edit-") as tmp:
        path = Path(tmp) / "kernel.md"
        path.write_text(text, encoding="utf-8")
        argv = [*command, str(path)]
        try:
            if app.is_headless:  # tests: no terminal to hand over; the editor is a script
                code = await asyncio.to_thread(_run, argv, False)
            else:
                # While the editor has the terminal the session goes on; nothing is drawn until
                # the app is back (batch_update), then the whole screen is.
                with app.batch_update(), app.suspend():
                    code = await asyncio.to_thread(_run, argv, True)
        except SuspendNotSupported:
            return "this terminal cannot hand over to $EDITOR: unset it to use the built-in editor"
        except OSError as exc:
            return f"could not run {command[0]!r}: {exc.strerror or exc}"
        if code != 0:
            return f"the editor exited with status {code}: nothing was submitted"
        written = path.read_text(encoding="utf-8", errors="replace")
    if written == text:
        return "the kernel is unchanged: nothing was submitted"
    try:
        reply = parse_reply(written)
    except FormatError as exc:
        return f"not submitted: {str(exc).splitlines()[0]}"
    return EditResult(reply.source, reply.plan_json)
