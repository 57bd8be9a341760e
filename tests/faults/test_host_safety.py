"""Host safety: candidates that try to read the host's files through the preprocessor (every attack in
tests/compile/attacks.py), driven through each way a reply reaches the compiler:

- `cuda-llm eval vector_add REPLY.md --compile-only`, once per attack, as text and as JSON;
- a headless `cuda-llm run` against the loopback model server (every attack a candidate), then
  `cuda-llm sessions` and `cuda-llm export` of that session;
- the TUI's pipeline: the app driven with Pilot against the loopback server and the fake GPU, every
  candidate shown in turn in the panes;
- the engine's own session (open_session), for its events.

The compiler processes run in a folder with a planted `../x.h`, and with a marker key in their
environment (OPENAI_API_KEY: what /proc/self/environ would show). No line of /etc/passwd,
/etc/hostname, of the planted files, nor the marker, may appear in any output, prompt sent to the
server, event, database byte, export or screen. Each attack is a format error that names its line, in
every path; allowed tricks (inline PTX, allowed pragmas) compile. Each row of docs/reliability.md is a
family of attacks; its test reads the record of all four runs (one run per path for the whole module,
so the suite stays fast). Where the compiler is jailed (engine/compile/sandbox.py), the same attacks
with the policy switched off are tests/compile/test_sandbox.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from llm_servers import LoopbackLLMServer
from scripted import GOOD_KERNEL, chunked, reply
from session_driver import Recorder, options, run_session

from cuda_llm.app.cli.main import main as cuda_llm
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.store.sessions import SessionStore
from tests.compile.attacks import ATTACKS, HARMLESS, HEADERS_IN_USE, SECRET_FILES, secret_snippets

GROUP = "host safety"
# Each path's module fixture judges every attack case (an eval each, whole sessions, the TUI): several
# minutes on a busy 2-core machine, counted in the first test that uses it, so the per-test limit
# (pyproject.toml) is raised here.
pytestmark = pytest.mark.timeout(1500)
PLANTED = "PLANTED"  # stands for the planted file's absolute path in a variant
# Inline PTX that a kernel may use (the lane id), in a kernel the vector_add plan binds.
PTX_KERNEL = GOOD_KERNEL.replace(
    "int i = (",
    'unsigned lane;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n'
    "    if (lane > 31) return;\n    int i = (",
)
REFUSED = "rejected before compiling"
# Every how many replies `eval`'s text form is run besides its --json (the rest are rendered).
TEXT_EVAL_EVERY = 8


# Two compiles of one reply print the same but for how long each took.
def timeless(text: str) -> str:
    """The text without what differs between two runs of the same judgement: durations."""
    text = re.sub(r"ok in [0-9.]+ s", "ok in T s", text)
    return re.sub(r"(?m)^took: .*$", "took: T", text)


# A candidate judged normally: compiled (compile-only), or run on the TUI's fake GPU.
JUDGED = ("compiled", "correct")


@dataclass(frozen=True)
class Variant:
    prefix: str  # put in front of a good vector_add kernel (or, for PTX, the whole source)
    expect: str  # "compiled", or a fragment of the format error's detail
    target: str = "/etc/passwd"  # what FILE stands for


def attack(name: str, expect: str = REFUSED, target: str = "/etc/passwd") -> Variant:
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
    '#include "../x.h" (x.h planted one folder up from the compiler\'s working folder); <../..>, <cuda/std/../..>': (
        "format error naming the line",
        [
            attack("quoted_relative", 'line 1: quoted includes (#include "...")'),
            Variant('#include "../x.h"\n', 'line 1: quoted includes (#include "...")'),
            attack("angle_dotdot", "paths are not allowed", PLANTED),
            attack("allowed_prefix_dotdot", "paths are not allowed", PLANTED),
        ],
    ),
    'computed includes (#define H <FILE> / "FILE" / F(x) <x>; #include H)': (
        "format error naming the line",
        [
            attack(name, "line 2: #include of a macro or an expression is not allowed", PLANTED)
            for name in ("macro_include", "macro_quoted_include", "function_macro_include")
        ],
    ),
    "#include_next, #import, #embed, #line and linemarkers, #ident, trailing tokens, #include under #if 0": (
        "format error naming the line",
        [
            attack("include_next", "line 1: #include_next is not allowed", PLANTED),
            attack("import", "line 1: #import is not allowed"),
            attack("embed", "line 1: #embed is not allowed", PLANTED),
            attack("line_directive", "line 1: #line is not allowed"),
            attack("linemarker", "line 1: #line is not allowed"),
            attack("unknown_directive", "line 1: #ident is not allowed"),
            attack("trailing_tokens", "line 1: malformed #include"),
            attack("include_in_disabled_block", 'line 2: quoted includes (#include "...")'),
        ],
    ),
    "#pragma tricks (message, GCC dependency, include_alias, push_macro); allowed pragmas": (
        "format error naming the line; allowed pragmas compile",
        [
            attack("pragma_message", "line 1: #pragma message"),
            attack("pragma_gcc_dependency", "line 1: #pragma GCC dependency", PLANTED),
            attack("pragma_include_alias", "line 1: #pragma include_alias", PLANTED),
            attack("pragma_push_macro", "line 1: #pragma push_macro"),
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
    "__has_include / __has_include_next / __has_embed probes": (
        "format error naming the line",
        [
            attack("has_include_in_if", "line 1: __has_include is not allowed", PLANTED),
            attack("has_include_in_code", "line 1: __has_include is not allowed"),
            attack("has_include_next", "line 1: __has_include_next is not allowed"),
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
    "line splices inside a directive (after #, in the name, in the header, before it; backslash-space)": (
        "format error naming the line",
        [
            attack("splice_after_hash", "line 1: a line continuation (backslash-newline) inside a directive name"),
            attack("splice_in_name", "line 1: a line continuation (backslash-newline) inside a directive name"),
            attack("splice_in_header_name", "line 1:"),
            attack("splice_before_header", "line 1: a line continuation inside #include", PLANTED),
            attack("backslash_space_newline", "line 1: a backslash followed by spaces"),
        ],
    ),
    "comments inside or before a directive, and in the header name": (
        "format error naming the line",
        [
            attack("comment_after_hash", "line 1: a comment inside a directive name"),
            attack("comment_inside_directive", "line 1: a comment inside a directive name", PLANTED),
            attack("multiline_comment_in_directive", "line 1: a /* */ comment that spans lines"),
            attack("block_comment_before_hash", 'line 2: quoted includes (#include "...")'),
            attack("comment_in_brackets", "line 1: #include <...> with a comment or quote inside"),
        ],
    ),
    "literals that could hide a line (digit separators, a quote in a char, unterminated, raw strings)": (
        "format error naming the line",
        [
            attack("digit_separator_hiding", 'line 2: quoted includes (#include "...")'),
            attack("char_quote_hiding", 'line 2: quoted includes (#include "...")'),
            attack("unterminated_string", 'line 2: quoted includes (#include "...")'),
            attack("raw_string", 'line 1: raw string literals (R"(...)") are not allowed'),
        ],
    ),
    "line breaks the compiler may see where the check does not (a lone CR, U+2028)": (
        "format error naming the line",
        [
            attack("carriage_return_break", REFUSED),
            attack("unicode_line_separator", REFUSED),
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
    "/proc/self/environ through a literal's backslash and directly (a marker key in the environment)": (
        "format error naming the included line",
        [
            attack(
                "string_backslash_before_empty_line",
                "line 3: #include </proc/self/environ>: paths are not allowed",
                "/proc/self/environ",
            ),
            attack(
                "angle_absolute", "line 1: #include </proc/self/environ>: paths are not allowed", "/proc/self/environ"
            ),
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
    "a digit separator in an #if 0 group (NVRTC reads 1'0 there as a char literal, so a /* opens nothing)": (
        "format error naming the comment's line",
        [
            attack("digit_separator_in_skipped_group", "line 2: a /* comment that runs over several lines", PLANTED),
            attack("hex_separator_in_skipped_group", "line 2: a /* comment that runs over several lines"),
        ],
    ),
    "a quote right after a number (NVRTC takes the one after 0x for a digit separator, the next for a literal)": (
        "format error naming the line",
        [attack("quote_after_a_number", "line 1: a quote right after a number is not allowed", PLANTED)],
    ),
    "macros of the CUDA headers that paste or emit a pragma (_CCCL_PP_CAT(__has_, include), _CCCL_PRAGMA, renamed)": (
        "format error naming the line; the headers in honest use compile",
        [
            attack("header_macro_pasted_has_include", "line 2: _CCCL_PP_CAT is a macro of the CUDA headers", PLANTED),
            attack("header_macro_pasted_pragma", "line 2: _CCCL_PP_CAT is a macro of the CUDA headers"),
            attack("header_macro_pragma", "line 2: _CCCL_PRAGMA is a macro of the CUDA headers"),
            attack("header_macro_renamed", "line 2: _CCCL_PP_CAT is a macro of the CUDA headers", PLANTED),
            Variant(HEADERS_IN_USE, "compiled"),
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
class World:
    """What every path shares: the planted files, the secrets, the replies."""

    tmp: Path
    planted: Path
    secrets: dict[str, list[str]]
    replies: dict[str, tuple[str, Variant]]  # reply text -> (case, variant)


@dataclass
class PathRun:
    """What one path left behind: each reply's (status, format detail or message), and every text
    in which a secret must not appear."""

    name: str
    judged: dict[str, tuple[str, str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("host-safety")
    marker = f"cuda-llm-secret-{uuid.uuid4().hex}"
    planted = tmp / "planted.h"
    planted.write_text(f"{marker}-absolute\nint planted_{uuid.uuid4().hex[:8]} = 1;\n")
    work = tmp / "work"
    work.mkdir()
    (tmp / "x.h").write_text(f"{marker}-dotdot\n")  # what #include "../x.h" would read from work/
    replies = {reply(source_of(case, v, planted)): (case, v) for case, (_, vs) in CASES.items() for v in vs}
    assert len(replies) == sum(len(vs) for _, vs in CASES.values()), "each variant a source of its own"
    secrets = {str(p): secret_snippets(p) for p in SECRET_FILES}
    secrets[str(planted)] = [f"{marker}-absolute"]
    secrets["../x.h"] = [f"{marker}-dotdot"]
    secrets["/proc/self/environ"] = [ENV_MARKER]
    with pytest.MonkeyPatch.context() as mp:
        # Every compiler process starts in work/, so a relative include would resolve next to x.h,
        # and with a key in its environment, which /proc/self/environ would show.
        mp.chdir(work)
        mp.setenv("OPENAI_API_KEY", ENV_MARKER)
        mp.setenv("CUDA_LLM_HOME", str(tmp / "home"))
        yield World(tmp, planted, secrets, replies)


def _rounds(count: int, most: int = 32) -> tuple[int, int]:
    """(candidates per round, rounds) that hold `count` candidates, at most `most` a round (a round
    holds at most 32)."""
    per_round = -(-count // -(-count // most))
    return per_round, -(-count // per_round)


def _database_bytes(folder: Path) -> str:
    data = b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("sessions.db"))
    return data.decode("utf-8", errors="replace")


def _judged_from_store(db: Path, session_id: int | None = None) -> dict[str, tuple[str, str]]:
    store = SessionStore(db)
    try:
        sid = session_id if session_id is not None else store.sessions(1)[0].id
        cands = store.candidates(sid)
    finally:
        store.close()  # the last close checkpoints the WAL into the file
    out = {}
    for c in cands:
        j = c.judgement
        out[c.reply] = (c.status, (j.detail or j.message) if j else "")
    return out


def _cli(*argv: str) -> tuple[int, str, str]:
    """`cuda-llm ARGV` in process: (exit code, stdout, stderr), as a terminal would receive them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cuda_llm(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def eval_run(world: World) -> PathRun:
    """`cuda-llm eval` on each reply file, as text and as JSON."""
    from cuda_llm.app.cli.eval_cmd import render
    from cuda_llm.engine.core.serialize import load
    from cuda_llm.engine.judge.judgement import Judgement, LibraryResult

    run = PathRun("eval")
    texts = [*world.replies, reply()]  # and one good candidate
    for n, text in enumerate(texts):
        path = world.tmp / f"reply-{n}.md"
        path.write_text(text)
        code, out, err = _cli("eval", "vector_add", str(path), "--compile-only", "--json")
        record = json.loads(out)
        judgement = record["judgement"]
        run.judged[text] = (judgement["status"], judgement.get("detail") or judgement.get("message") or "")
        assert code == (0 if judgement["status"] == "compiled" else 1), (code, err)
        run.texts[f"eval --json of reply {n}"] = out + err
        # The text form is eval_cmd.render of the same judgement: rendered here for every reply, and
        # for every TEXT_EVAL_EVERY-th (and the good one) also printed by `eval` itself, which must
        # print exactly that (a compiler start per eval is most of this fixture's minutes).
        lib = record["library"]  # compile-only: a name and why it has no figure, nothing timed
        assert lib["median_us"] is None, lib
        library = LibraryResult(lib["name"], note=lib["note"], device=lib["device"]) if lib["name"] else None
        shown = render(load(Judgement, judgement), record["device"], library, tuple(record["notes"])) + "\n"
        if n % TEXT_EVAL_EVERY == 0 or n == len(texts) - 1:
            code_text, out_text, err_text = _cli("eval", "vector_add", str(path), "--compile-only")
            assert (code_text, timeless(out_text), err_text) == (code, timeless(shown), err), n
        run.texts[f"eval of reply {n}"] = shown + err
    return run


@pytest.fixture(scope="module")
def cli_run(world: World) -> PathRun:
    """One headless `cuda-llm run` with every reply a candidate, then `sessions` and `export`."""
    run = PathRun("headless run")
    folder = world.tmp / "cli"
    folder.mkdir()
    db = folder / "sessions.db"
    texts = [*world.replies, reply()]  # and one good candidate
    per_round, rounds = _rounds(len(texts))
    with LoopbackLLMServer() as server:
        server.script(*[chunked(t, size=200) for t in texts])
        server.default = chunked(reply())
        code, out, err = _cli(
            "run", "vector_add", "--model", "ollama:loop-model", "--host", server.url, "--headless",
            "--compile-only", "--candidates", str(per_round), "--rounds", str(rounds + 1), "--repairs", "0",
            "--patience", "0", "--db", str(db),
        )  # fmt: skip
        prompts = [json.dumps(r.body) for r in server.requests if r.body is not None]
    assert code == 0, err
    session_id = int(re.search(r"session (\d+): finished", out).group(1))  # type: ignore[union-attr]
    run.texts["run stdout and stderr"] = out + err
    run.texts["prompts sent to the server"] = "\n".join(prompts)
    run.texts["the last prompt"] = prompts[-1]
    _, listing, listing_err = _cli("sessions", "--db", str(db))
    run.texts["sessions"] = listing + listing_err
    export = folder / "export"
    export_code, exported, export_err = _cli("export", str(session_id), "--db", str(db), "--out", str(export))
    assert export_code == 0, export_err
    run.texts["export output"] = exported + export_err
    for path in sorted(export.iterdir()):
        run.texts[f"export {path.name}"] = path.read_text()
    run.judged = _judged_from_store(db, session_id)
    run.texts["database bytes"] = _database_bytes(folder)
    return run


@pytest.fixture(scope="module")
def engine_run(world: World) -> PathRun:
    """The engine's session in process: its events."""
    run = PathRun("engine session")
    folder = world.tmp / "engine"
    folder.mkdir()
    texts = [*world.replies, reply()]
    per_round, rounds = _rounds(len(texts))
    with LoopbackLLMServer() as server:
        server.script(*[chunked(t, size=200) for t in texts])
        server.default = chunked(reply())
        control = Controller(auto_accept=True, stop_when_paused=True)
        recorder = Recorder()
        opts = options(folder, "ollama:loop-model", candidates=per_round, rounds=rounds + 1, repairs=0)
        result, _ = asyncio.run(run_session(opts, host=server.url, control=control, recorder=recorder))
        prompts = [json.dumps(r.body) for r in server.requests if r.body is not None]
    assert result.status == "finished", result.reason
    run.texts["events"] = "\n".join(repr(e) for e in recorder.events)
    run.texts["prompts sent to the server"] = "\n".join(prompts)
    run.judged = _judged_from_store(folder / "sessions.db", result.session_id)
    run.texts["database bytes"] = _database_bytes(folder)
    assert {e.judgement.status for e in recorder.of(ev.CandidateJudged)} >= {"format_error", "compiled"}
    return run


@pytest.fixture(scope="module")
def tui_run(world: World) -> PathRun:
    """The TUI: the app (Pilot, fake GPU) runs the session; then every candidate is shown in turn and
    the whole screen read, as text and as the screenshot a person would see."""
    import dataclasses

    from textual.widgets import Tree
    from tui.helpers import FAST_LOOP, by_request, make_app, text, wait_for

    from cuda_llm.engine.core.settings import GenerateOptions

    run = PathRun("TUI")
    folder = world.tmp / "tui"
    folder.mkdir()
    texts = [*world.replies, reply()]
    # Eight streams at a time: a loaded machine's app still reads each of them within the loopback
    # server's idle limit.
    per_round, rounds = _rounds(len(texts), most=8)

    def show(app, label: str) -> None:
        tree = app.screen.query_one(Tree)

        def find(node):
            if node.data == label:
                return node
            return next((hit for child in node.children if (hit := find(child)) is not None), None)

        node = find(tree.root)
        assert node is not None, f"{label} is not in the tree"
        tree.select_node(node)

    # Each request gets its reply by (round, attempt, slot), whatever order the N concurrent requests of
    # a round arrive in; a loaded machine gets time to stream them.
    table = {(1 + i // per_round, 0, i % per_round): chunked(t, size=200) for i, t in enumerate(texts)}
    loop = dataclasses.replace(FAST_LOOP, generate=GenerateOptions(timeout_s=120.0, first_token_timeout_s=60.0, seed=0))

    async def drive(server: LoopbackLLMServer) -> str:
        app = make_app(
            folder, server.url, loop=loop, task="vector_add", model="ollama:loop-model", candidates=per_round,
            rounds=rounds + 1, repairs=0, patience=0, target_roofline=0.0, auto_accept=True,
        )  # fmt: skip
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(pilot, lambda: "loop-model" in text(app.screen), "ollama's models")
            await pilot.press("f5")
            await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end of the session", 120)
            log = "\n".join(app.screen.view.log)
            for label in list(app.screen.view.candidates):
                show(app, label)
                await pilot.pause()
                run.texts[f"screen showing {label}"] = text(app.screen)
                run.texts[f"screenshot showing {label}"] = app.export_screenshot()
        return log

    with LoopbackLLMServer() as server:
        server.default = by_request(table, chunked(reply()))
        log = asyncio.run(drive(server))
        prompts = [json.dumps(r.body) for r in server.requests if r.body is not None]
    run.texts["prompts sent to the server"] = "\n".join(prompts)
    run.judged = _judged_from_store(folder / "sessions.db")
    run.texts["database bytes"] = _database_bytes(folder)
    assert set(texts) <= set(run.judged), f"{len(set(texts) - set(run.judged))} replies never judged: {log[-2000:]}"
    return run


def leaks(world: World, run: PathRun) -> list[str]:
    found = []
    for path, lines in world.secrets.items():
        for line in lines:
            found += [f"a line of {path} in the {run.name}'s {where}" for where, t in run.texts.items() if line in t]
    return found


def checked_lines(world: World) -> int:
    return sum(len(lines) for lines in world.secrets.values())


def case_param(case: str) -> pytest.param:  # type: ignore[valid-type]
    expected, _ = CASES[case]
    return pytest.param(
        case,
        marks=pytest.mark.fault(
            GROUP,
            case,
            f"{expected}, through eval, a headless run and the TUI; no host file's content nor the key in any "
            "output, prompt, event, database byte, export or screen",
        ),
        id=re.sub(r"[^a-z0-9]+", "-", case.lower()).strip("-")[:40],
    )


@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_host_file_never_leaks(world, eval_run, cli_run, tui_run, engine_run, case: str, observed) -> None:
    runs = (eval_run, cli_run, tui_run, engine_run)
    _, variants = CASES[case]
    seen = []
    for v in variants:
        text = reply(source_of(case, v, world.planted))
        for run in runs:
            status, detail = run.judged[text]
            if v.expect == "compiled":
                assert status in JUDGED, f"{run.name}: {detail}"
            else:
                assert status == "format_error", f"{run.name} ({v.prefix!r}): {status}: {detail}"
                assert v.expect in detail, f"{run.name}: {detail}"
        status, detail = eval_run.judged[text]
        seen.append(f"{status} '{v.expect if v.expect != 'compiled' else ''}'".replace(" ''", ""))
    # The good candidate was judged normally everywhere, and the prompts carried the failures back to
    # the model (the last round's prompt names a refused line): the model is told, and nothing leaks.
    for run in runs:
        assert run.judged[reply()][0] in JUDGED, run.name
    assert "rejected before compiling" in cli_run.texts["the last prompt"]
    for run in runs:
        assert not leaks(world, run), leaks(world, run)[:3]
    # The search can find what is there: the planted file's path (not its content) is in each record,
    # the TUI's screens included (the compiler pane shows the refusal).
    for run, where in (
        (cli_run, "database bytes"),
        (cli_run, "prompts sent to the server"),
        (engine_run, "events"),
        (tui_run, "screen showing"),
        (eval_run, "eval of reply"),
    ):
        assert any(str(world.planted) in t for name, t in run.texts.items() if name.startswith(where)), where
    # A pane as narrow as the compiler's wraps a long temporary path, so the picture is searched for
    # the planted file's name, which fits on one line.
    pictures = [html.unescape(t) for name, t in tui_run.texts.items() if name.startswith("screenshot showing")]
    assert any(world.planted.name in t for t in pictures), "the TUI's screenshots"
    observed(
        "; ".join(seen)
        + f" (the same in eval, the headless run, the TUI and the engine); {checked_lines(world)} secret lines and "
        "the key absent from every output, prompt, event, database, export and screen"
    )


def test_every_attack_of_the_corpus_is_a_case() -> None:
    used = {v.prefix for _, vs in CASES.values() for v in vs}
    assert not [name for name, text in ATTACKS.items() if text not in used]


@pytest.mark.fault(
    GROUP,
    "the whole attack corpus with the include policy switched off, in a jailed compiler child (a marker key in "
    "its environment)",
    "every attack that reads or probes a file unguarded gets nothing: 'cannot open source file', the same answer "
    "for a file that exists and one that does not; no secret in any result; the CUDA headers still compile",
)
def test_the_jail_alone_holds_every_attack(world, observed) -> None:
    from tests.compile.attacks import PROBED_BY_NVRTC, READ_BY_NVRTC, K, attack
    from tests.compile.jail import PolicyFreeCompiler

    absent = world.tmp / "absent.h"
    held, reasons = [], []
    for mechanism in ("landlock", "chroot"):
        compiler = PolicyFreeCompiler((mechanism,))
        try:
            if not compiler.active:
                reasons.append(f"{mechanism}: {compiler.detail}")
                continue
            for name in sorted(READ_BY_NVRTC):
                result = compiler.compile(attack(name, world.planted) + K)
                everything = "\n".join([result.log, result.error or "", repr(result.diagnostics)])
                assert not result.ok and "cannot open source file" in result.log, (mechanism, name, result.log)
                assert not [line for lines in world.secrets.values() for line in lines if line in everything], name
            for name in sorted(PROBED_BY_NVRTC):
                present, missing = (
                    compiler.compile(attack(name, path).replace("#endif", "#warning found\n#endif") + K)
                    for path in (world.planted, absent)
                )
                assert "found" not in present.log and "found" not in missing.log, (mechanism, name, present.log)
            assert compiler.compile("#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n" + K).ok, mechanism
            held.append(f"{compiler.info['sandbox_mechanism']} ({compiler.detail.split(':')[0]})")
        finally:
            compiler.close()
    if not held:
        pytest.skip("no jail on this machine: " + "; ".join(reasons))
    observed(
        f"{len(READ_BY_NVRTC)} reading and {len(PROBED_BY_NVRTC)} probing attacks got nothing past the policy in "
        + " and ".join(held)
        + (f"; not available here: {'; '.join(reasons)}" if reasons else "")
    )
