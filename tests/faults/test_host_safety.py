"""Host safety: candidates that try to read the host's files through the preprocessor, driven through a
whole compile-only session (scripted replies from the loopback server). No line of /etc/passwd,
/etc/hostname or of two planted files may appear in the database's bytes, in any prompt sent to the
server, or in any event; each attempt is a format error that names its line, and allowed tricks
(inline PTX, allowed pragmas) compile.

One session carries every case as a candidate of its first round (so the suite stays fast), then a
second round whose prompt carries round 1's failures back to the model; each case is a test of its own
over that session's record.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from llm_servers import LoopbackLLMServer
from scripted import GOOD_KERNEL, chunked, reply
from session_driver import Recorder, options, run_session

from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.store.sessions import SessionStore
from tests.compile.attacks import ATTACKS, HARMLESS, SECRET_FILES, secret_snippets

GROUP = "host safety"
PLANTED = "PLANTED"  # stands for the planted file's absolute path in a variant
# Inline PTX that a kernel may use (the lane id), in a kernel the vector_add plan binds.
PTX_KERNEL = GOOD_KERNEL.replace(
    "int i = (",
    'unsigned lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n'
    "    if (lane > 31) return;\n    int i = (",
)


@dataclass(frozen=True)
class Variant:
    prefix: str  # put in front of a good vector_add kernel (or, for PTX, the whole source)
    expect: str  # "compiled", or a fragment of the format error's detail
    target: str = "/etc/passwd"  # what FILE stands for


def attack(name: str, expect: str, target: str = "/etc/passwd") -> Variant:
    return Variant(ATTACKS[name], expect, target)


CASES: dict[str, tuple[str, list[Variant]]] = {
    '#include "/etc/passwd"': (
        "format error naming the line",
        [attack("quoted_absolute", 'line 1: quoted includes (#include "...")')],
    ),
    "#include </etc/hostname>": (
        "format error naming the line",
        [attack("angle_absolute", "line 1: #include </etc/hostname>: paths are not allowed", "/etc/hostname")],
    ),
    '#include "../x.h" (x.h planted one folder up from the compiler\'s working folder)': (
        "format error naming the line",
        [
            Variant('#include "../x.h"\n', 'line 1: quoted includes (#include "...")'),
            attack("angle_dotdot", "paths are not allowed", PLANTED),
            attack("allowed_prefix_dotdot", "paths are not allowed", PLANTED),
        ],
    ),
    'macro includes (#define H <FILE> / "FILE" / F(x) <x>; #include H)': (
        "format error naming the line",
        [
            attack(name, "line 2: #include of a macro or an expression is not allowed", PLANTED)
            for name in ("macro_include", "macro_quoted_include", "function_macro_include")
        ],
    ),
    "#pragma tricks (message, GCC dependency, include_alias, #line, linemarker); allowed pragmas": (
        "format error naming the line; allowed pragmas compile",
        [
            attack("pragma_message", "line 1: #pragma message"),
            attack("pragma_gcc_dependency", "line 1: #pragma GCC dependency", PLANTED),
            attack("pragma_include_alias", "line 1: #pragma include_alias", PLANTED),
            attack("line_directive", "line 1: #line is not allowed"),
            attack("linemarker", "line 1: #line is not allowed"),
            Variant(HARMLESS["pragmas"].split("extern", 1)[0], "compiled"),
        ],
    ),
    "_Pragma / __pragma operators": (
        'format error naming the line; _Pragma("unroll") compiles',
        [
            attack("pragma_operator_message", "line 1: #pragma message"),
            attack("pragma_operator_macro", "line 1: _Pragma(...) is allowed only with a string literal"),
            attack("ms_pragma", "line 1: __pragma(...) is not allowed"),
            Variant(HARMLESS["pragma_operator"].split("extern", 1)[0], "compiled"),
        ],
    ),
    "__has_include probes": (
        "format error naming the line",
        [
            attack("has_include_in_if", "line 1: __has_include is not allowed", PLANTED),
            attack("has_include_in_code", "line 1: __has_include is not allowed"),
            attack("has_include_next", "line 1: __has_include_next is not allowed"),
        ],
    ),
    "#embed / __has_embed": (
        "format error naming the line",
        [
            attack("embed", "line 1: #embed is not allowed", PLANTED),
            attack("has_embed", "line 1: __has_embed is not allowed"),
        ],
    ),
    "digraph and trigraph spellings of #include": (
        "format error naming the line",
        [
            attack("digraph", "line 1: the digraph %: is not allowed", PLANTED),
            attack("digraph_spaced", "line 1: the digraph %: is not allowed", "/etc/hostname"),
            attack("trigraph", "line 1: trigraph '??=' is not allowed"),
        ],
    ),
    "a literal's backslash before a line end (string, char, after #endif)": (
        "format error naming the included line",
        [
            attack("string_backslash_before_empty_line", "line 3: #include </etc/passwd>: paths are not allowed"),
            attack("char_backslash_before_empty_line", "line 3: #include </etc/passwd>: paths are not allowed"),
            attack("string_backslash_after_endif", "line 4: #include </etc/passwd>: paths are not allowed"),
        ],
    ),
    "/proc/self/environ through a literal's backslash (a marker key in the environment)": (
        "format error naming the included line",
        [
            attack(
                "string_backslash_before_empty_line",
                "line 3: #include </proc/self/environ>: paths are not allowed",
                "/proc/self/environ",
            )
        ],
    ),
    "token pasting and universal character names (_Pragma, __has_include)": (
        "format error naming the line",
        [
            attack("pasted_pragma", "line 1: token pasting (##) is not allowed"),
            attack("pasted_has_include", "line 1: token pasting (##) is not allowed", PLANTED),
            attack("digraph_pasting", "line 1: token pasting (##) is not allowed"),
            attack("ucn_pragma", "line 1: a backslash outside strings and comments is not allowed"),
            attack("ucn_has_include", "line 1: a backslash outside strings and comments is not allowed", PLANTED),
        ],
    ),
    "inline PTX (allowed)": ("compiles", [Variant("", "compiled")]),
}
# Stands for a key in the compiler's environment: /proc/self/environ would show it.
ENV_MARKER = f"sk-cuda-llm-marker-{uuid.uuid4().hex}"


def source_of(case: str, variant: Variant, planted: Path) -> str:
    kernel = PTX_KERNEL if case.startswith("inline PTX") else GOOD_KERNEL
    return variant.prefix.replace("FILE", str(planted) if variant.target == PLANTED else variant.target) + kernel


@dataclass
class Run:
    """What the one session left behind."""

    by_reply: dict[str, tuple[str, str, str]]  # reply text -> (label, status, format detail or message)
    secrets: dict[str, list[str]]  # file -> the lines that must not leak
    db_bytes: bytes
    prompts: list[str]  # every request body the server received
    events: list[str]  # repr of every event
    statuses: dict[str, str]
    planted: Path


@pytest.fixture(scope="module")
def session_run(tmp_path_factory) -> Run:
    tmp = tmp_path_factory.mktemp("host-safety")
    marker = f"cuda-llm-secret-{uuid.uuid4().hex}"
    planted = tmp / "planted.h"
    planted.write_text(f"{marker}-absolute\nint planted_{uuid.uuid4().hex[:8]} = 1;\n")
    work = tmp / "work"
    work.mkdir()
    (tmp / "x.h").write_text(f"{marker}-dotdot\n")  # what #include "../x.h" would read from work/
    replies = {source_of(case, v, planted): (case, v) for case, (_, vs) in CASES.items() for v in vs}
    texts = [reply(src) for src in replies] + [reply()]  # and one good candidate
    with pytest.MonkeyPatch.context() as mp, LoopbackLLMServer() as server:
        # The compiler processes start in work/, so a relative include would resolve next to x.h,
        # and with a key in their environment, which /proc/self/environ would show.
        mp.chdir(work)
        mp.setenv("OPENAI_API_KEY", ENV_MARKER)
        server.script(*[chunked(t, size=200) for t in texts])
        server.default = chunked(reply())
        control = Controller(auto_accept=True, stop_when_paused=True)
        recorder = Recorder()

        # The cases fill the first rounds (a round holds at most 32 candidates); the last round asks
        # for one candidate, whose prompt carries the failures back.
        per_round = -(-len(texts) // -(-len(texts) // 32))
        case_rounds = -(-len(texts) // per_round)

        def last_round_asks_for_one(event: ev.Event) -> None:
            recorder(event)
            if isinstance(event, ev.RoundFinished) and event.round == case_rounds:
                control.set_candidates(1)

        opts = options(tmp, "ollama:loop-model", candidates=per_round, rounds=case_rounds + 1, repairs=0)
        result, _ = asyncio.run(
            run_session(opts, host=server.url, control=control, recorder=last_round_asks_for_one)  # type: ignore[arg-type]
        )
        prompts = [json.dumps(r.body) for r in server.requests if r.body is not None]
    assert result.status == "finished", result.reason
    db = tmp / "sessions.db"
    store = SessionStore(db)
    try:
        cands = store.candidates(result.session_id)
    finally:
        store.close()  # the last close checkpoints the WAL into the file
    by_reply = {}
    for c in cands:
        j = c.judgement
        by_reply[c.reply] = (c.label, c.status, (j.detail or j.message) if j else "")
    secrets = {str(p): secret_snippets(p) for p in SECRET_FILES}
    secrets[str(planted)] = [f"{marker}-absolute"]
    secrets["../x.h"] = [f"{marker}-dotdot"]
    secrets["/proc/self/environ"] = [ENV_MARKER]
    db_bytes = b"".join(p.read_bytes() for p in tmp.iterdir() if p.name.startswith("sessions.db"))
    return Run(
        by_reply=by_reply,
        secrets=secrets,
        db_bytes=db_bytes,
        prompts=prompts,
        events=[repr(e) for e in recorder.events],
        statuses=recorder.final_statuses(),
        planted=planted,
    )


def assert_no_leak(run: Run) -> str:
    checked = 0
    for path, lines in run.secrets.items():
        for line in lines:
            checked += 1
            assert line.encode() not in run.db_bytes, f"a line of {path} is in the database file"
            assert not any(line in p for p in run.prompts), f"a line of {path} was sent to the model server"
            assert not any(line in e for e in run.events), f"a line of {path} is in an event"
    assert checked >= 2, "at least the planted files are checked"
    # The search can find what is there: the planted file's path (not its content) is in the record.
    assert str(run.planted).encode() in run.db_bytes and any(str(run.planted) in p for p in run.prompts)
    short = [p for p, lines in run.secrets.items() if not lines]
    return f"{checked} secret lines absent from DB bytes, prompts and events" + (
        f" ({', '.join(short)} has no line of 8+ characters here: the planted files stand in)" if short else ""
    )


def case_param(case: str) -> pytest.param:  # type: ignore[valid-type]
    expected, _ = CASES[case]
    return pytest.param(
        case,
        marks=pytest.mark.fault(GROUP, case, f"{expected}; no host file's content in the DB, a prompt or an event"),
        id=re.sub(r"[^a-z0-9]+", "-", case.lower()).strip("-")[:40],
    )


@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_host_file_never_leaks(session_run: Run, case: str, observed) -> None:
    _, variants = CASES[case]
    seen = []
    for v in variants:
        label, status, detail = session_run.by_reply[reply(source_of(case, v, session_run.planted))]
        if v.expect == "compiled":
            assert status == "compiled", f"{label}: {detail}"
            seen.append(f"{label} compiled")
        else:
            assert status == "format_error", f"{label} ({v.prefix!r}): {status}: {detail}"
            assert v.expect in detail, detail
            seen.append(f"{label} format_error '{v.expect}'")
    # The good candidate among the cases and the last round's candidate were judged normally.
    good = session_run.by_reply[reply()]
    last = max(label for label in session_run.statuses if label.endswith("-1") and label != "baseline")
    assert good[1] == "compiled" and session_run.statuses[last] == "compiled"
    # The last round's prompt carried the failures back: the model is told, and still nothing leaks.
    assert "line 1:" in session_run.prompts[-1] or "line 2:" in session_run.prompts[-1]
    observed("; ".join(seen) + "; " + assert_no_leak(session_run))
