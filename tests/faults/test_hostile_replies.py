"""Host safety against a hostile reply, beyond reading host files (test_host_safety.py): what a reply can
make the compiler, the model server or the records carry out of the machine or into a terminal.

- the home folder's path: a header's `__FILE__` (an assert of libcu++) lands in the PTX as bytes, and the
  include folders in the recorded compile options; compiled from beside the headers by relative
  names, neither holds a host path (engine/compile/compiler_process.py);
- the size: a 432-byte source that makes megabytes of PTX is cut in every record and output, with a
  note, and a session's records stop growing past their bound (engine/judge/output_caps.py);
- escapes and invisible characters in a kernel reach the files `export` writes as visible escapes;
- a redirect to another server is never followed, and the line names both servers;
- no child process we start holds the model server's key in its environment.

The stale-memory kernel (a reply that searches device memory for the answer) is a GPU row:
tests/gpu/test_stale_memory.py."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import io
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_servers import LoopbackLLMServer
from scripted import GOOD_KERNEL, chunked, reply

from cuda_llm.app.cli.main import main as cuda_llm
from cuda_llm.engine.core.paths import user_cache_dir

GROUP = "host safety"
# A libcu++ assertion that names its header: `__FILE__` of <cuda/std/array>, kept as a PTX byte string.
PATH_KERNEL = """#define CCCL_ENABLE_ASSERTIONS
#include <cuda/std/array>
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    cuda::std::array<float, 4> t{1.f, 2.f, 3.f, 4.f};
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + 0.f * t[i % 5];
}
"""
PATH_PLAN = {
    "launches": [{"kernel": "vector_add", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]
}
# 2 x 64K constexpr entries: megabytes of PTX from a reply under 1 KB.
BIG_KERNEL = (
    "struct Table { unsigned v[65536]; __host__ __device__ constexpr Table() : v() {\n"
    "  for (unsigned i = 0; i < 65536; ++i) v[i] = i * 2654435761u; } };\n"
    "__device__ Table table_a = Table();\n__device__ Table table_b = Table();\n" + GOOD_KERNEL
)
# A hyperlink, a clear screen, a window title, a bell; a right-to-left override and the isolates; a
# zero-width space: in a comment and in a string literal.
HIDDEN = (
    "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \x1b[2J\x1b]0;pwned\x07 \u202eevil\u202c \u2066x\u2069 a\u200bb"
)
ESCAPES_KERNEL = f"// {HIDDEN}\n" + GOOD_KERNEL.replace(
    "{", '{\n    const char* note = "' + HIDDEN + '"; (void)note;', 1
)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cuda_llm(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _ptx_strings(text: str) -> str:
    """The byte-array strings of any PTX in `text` (`.b8 $str[N] = {104, 111, ...}`), decoded."""
    found = []
    for numbers in re.findall(r"\.b8\s+\$str[^=]*=\s*\{([\d,\s]+)\}", text):
        found.append(bytes(int(x) for x in numbers.split(",") if x.strip()).decode(errors="replace"))
    return "\n".join(found)


def _database_text(db: Path) -> str:
    data = b"".join(p.read_bytes() for p in sorted(db.parent.iterdir()) if p.name.startswith(db.name))
    return data.decode("utf-8", errors="replace")


def _headless_run(db: Path, server: LoopbackLLMServer, *replies: str) -> tuple[int, str, str]:
    server.script(*[chunked(r, size=200) for r in replies])
    server.default = chunked(reply())
    return _cli(
        "run", "vector_add", "--model", "ollama:loop-model", "--host", server.url, "--headless", "--compile-only",
        "--candidates", str(len(replies)), "--rounds", "1", "--repairs", "0", "--db", str(db),
    )  # fmt: skip


@pytest.mark.fault(
    GROUP,
    "a header's __FILE__ (#define CCCL_ENABLE_ASSERTIONS, #include <cuda/std/array>) and the include folders "
    "of the compile options: the home folder's path",
    "no absolute path of the headers' folder nor of the home folder in eval --json, a headless run's output, "
    "the prompts, the database or an export",
)
def test_no_host_path_in_any_output_of_a_reply_that_includes_a_header(tmp_path, llm_server, observed):
    folders = {str(Path.home()), str(user_cache_dir()), os.path.realpath(user_cache_dir())}
    texts: dict[str, str] = {}
    path = tmp_path / "reply.md"
    path.write_text(reply(PATH_KERNEL, PATH_PLAN))
    code, out, err = _cli("eval", "vector_add", str(path), "--compile-only", "--json")
    assert code == 0, err
    judgement = json.loads(out)["judgement"]
    assert judgement["status"] == "compiled", judgement["message"]
    strings = _ptx_strings(judgement["compile"]["ptx"])
    assert "cuda/std/array" in strings, "the assert's file name is in the PTX (the test sees what it looks for)"
    texts["eval --json"] = out + err + strings
    texts["eval"] = "".join(_cli("eval", "vector_add", str(path), "--compile-only")[1:])
    options = judgement["compile"]["options"]
    assert any(o.startswith("-I") for o in options) and not any(o.startswith("-I/") for o in options), options

    db = tmp_path / "s.db"
    code, out, err = _headless_run(db, llm_server, reply(PATH_KERNEL, PATH_PLAN))
    assert code == 0, err
    texts["run"] = out + err
    texts["prompts"] = "\n".join(json.dumps(r.body) for r in llm_server.requests if r.body is not None)
    database = _database_text(db)
    texts["database"] = database + _ptx_strings(database.replace("\\n", "\n").replace("\\t", "\t"))
    export = tmp_path / "export"
    code, out, err = _cli("export", "1", "--candidate", "r1-1", "--db", str(db), "--out", str(export))
    assert code == 0, err
    texts["export"] = out + err + "".join(p.read_text() for p in export.iterdir())
    leaks = [(where, folder) for where, text in texts.items() for folder in folders if folder in text]
    assert not leaks, leaks
    observed(
        f"the assert's file name is '{next(s for s in strings.splitlines() if 'cuda/std/array' in s)}'; options "
        f"{' '.join(o for o in options if o.startswith('-I'))}; no host path in {', '.join(texts)}"
    )


@pytest.mark.fault(
    GROUP,
    "a reply under 1 KB that compiles to megabytes of PTX (two 64K-entry constexpr tables in __device__ globals)",
    "the PTX cut to 1 MiB with a note in eval --json and the database; a session's records bounded",
)
def test_a_reply_that_makes_megabytes_of_ptx_is_cut_everywhere(tmp_path, llm_server, observed):
    path = tmp_path / "reply.md"
    path.write_text(reply(BIG_KERNEL))
    code, out, err = _cli("eval", "vector_add", str(path), "--compile-only", "--json")
    assert code == 0, err
    ptx = json.loads(out)["judgement"]["compile"]["ptx"]
    cut = re.search(r"\[PTX cut: ([\d,]+) bytes, the first ([\d,]+) kept\]", ptx)
    assert cut is not None, ptx[-300:]
    whole = int(cut.group(1).replace(",", ""))
    assert whole > 2 * 2**20 and len(out) < 2 * 2**20
    db = tmp_path / "s.db"
    code, _, err = _headless_run(db, llm_server, reply(BIG_KERNEL))
    assert code == 0, err
    size = sum(p.stat().st_size for p in tmp_path.iterdir() if p.name.startswith("s.db"))
    assert size < 4 * 2**20, size
    observed(
        f"{len(path.read_text())}-byte reply, {whole:,} bytes of PTX: eval --json printed {len(out):,} bytes with "
        f"the note; the session's database {size / 2**20:.1f} MiB"
    )


def test_a_session_past_its_bound_keeps_each_further_candidate_short(tmp_path):
    import dataclasses

    from cuda_llm.engine.compile.result import failed_result
    from cuda_llm.engine.core.settings import CompileSettings, LoopSettings
    from cuda_llm.engine.judge.judgement import Judgement
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(tmp_path / "s.db")
    try:
        store.output_limits = CompileSettings(max_session_output_bytes=400_000, max_session_tail_bytes=1000)
        sid = store.create_session("vector_add", "f", "fp", "ollama:m", LoopSettings(), "d", "sm_90")
        big = dataclasses.replace(failed_result("sm_90", "x"), ptx="p" * 100_000, log="l" * 50_000)
        for n in range(5):
            store.record_judgement(sid, Judgement(f"r1-{n}", "compiled", "ok", compile=big))
        kept = {c.label: len(c.judgement.compile.ptx) for c in store.candidates(sid)}
    finally:
        store.close()
    assert kept["r1-0"] == kept["r1-1"] == 100_000, kept
    assert all(kept[f"r1-{n}"] < 1200 for n in (2, 3, 4)), kept


@pytest.mark.fault(
    GROUP,
    "terminal escapes (a hyperlink, clear screen, window title) and bidi / invisible characters (U+202E, "
    "U+2066-2069, U+200B) in a kernel's comment and string literal, through `export`",
    "kernel.cu, report.md and report.json hold them as visible escapes; the exported kernel still compiles",
)
def test_export_writes_hostile_characters_as_visible_escapes(tmp_path, llm_server, observed):
    db = tmp_path / "s.db"
    code, _, err = _headless_run(db, llm_server, reply(ESCAPES_KERNEL, note="Faster " + HIDDEN))
    assert code == 0, err
    out_dir = tmp_path / "export"
    code, _, err = _cli("export", "1", "--candidate", "r1-1", "--db", str(db), "--out", str(out_dir))
    assert code == 0, err
    files = {p.name: p.read_text() for p in out_dir.iterdir()}
    raw = {name: sorted({f"U+{ord(ch):04X}" for ch in RAW.findall(text)}) for name, text in files.items()}
    assert not any(raw.values()), raw
    assert "\\x1b]8;;http://evil.example\\x07" in files["kernel.cu"] and "\\u202e" in files["kernel.cu"]
    assert "\\x1b" in files["report.md"] or "\\u001b" in files["report.md"]
    code, out, err = _cli("eval", "vector_add", str(out_dir), "--compile-only")
    assert code == 0, out + err
    observed(f"{', '.join(sorted(files))}: no raw control or format character; the export re-judged: compiled")


@contextlib.contextmanager
def redirecting(target: str, list_models: bool) -> Iterator[str]:
    """A server that answers every request (or every request but the model listing) with 307 to `target`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if list_models and self.path in ("/api/tags", "/v1/models"):
                body = json.dumps({"models": [{"name": "loop-model", "model": "loop-model"}],
                                   "data": [{"id": "loop-model", "object": "model"}]}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            else:
                body = b""
                self.send_response(307)
                self.send_header("Location", target + self.path)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.fault(
    GROUP,
    "a model server that answers 307 to another server (ollama and OpenAI clients; at the model listing and "
    "at a chat request)",
    "never followed: the other server gets no request; one line naming both servers (no session, or the "
    "session pauses)",
)
@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_a_redirect_to_another_server_is_never_followed(tmp_path, monkeypatch, kind, observed):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redirect-test")
    with LoopbackLLMServer() as elsewhere:
        elsewhere.default = chunked(reply())
        lines = []
        for at_listing in (True, False):
            db = tmp_path / f"s-{at_listing}.db"
            with redirecting(elsewhere.url, list_models=not at_listing) as url:
                server = ["--host", url] if kind == "ollama" else ["--base-url", url + "/v1"]
                code, out, err = _cli(
                    "run", "vector_add", "--model", f"{kind}:loop-model", *server, "--headless", "--compile-only",
                    "-N", "1", "-D", "1", "--db", str(db),
                )  # fmt: skip
                text = out + err
                line = next(x for x in text.splitlines() if "redirect to" in x)
                assert url in line and elsewhere.url in line, line
                assert code == (2 if at_listing else 3), text
            lines.append(line)
        assert not elsewhere.requests, [r.path for r in elsewhere.requests]
    observed(f"{kind}: the other server got no request; listing: exit 2, no session; chat: paused: {lines[1][:160]}")


@pytest.mark.fault(
    GROUP,
    "a model server that answers 307 with a Location that is not a URL (a port out of range; ollama and "
    "OpenAI clients, at the model listing)",
    "refused like any redirect to another server: one line quoting the location, exit 2, no traceback",
)
@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_a_redirect_to_a_location_that_does_not_parse_is_one_line(tmp_path, monkeypatch, kind, observed):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redirect-test")
    with redirecting("http://elsewhere.example:99999", list_models=False) as url:
        server = ["--host", url] if kind == "ollama" else ["--base-url", url + "/v1"]
        code, out, err = _cli(
            "run", "vector_add", "--model", f"{kind}:loop-model", *server, "--headless", "--compile-only",
            "-N", "1", "-D", "1", "--db", str(tmp_path / "s.db"),
        )  # fmt: skip
    text = out + err
    line = next(x for x in text.splitlines() if "redirect to" in x)
    assert url in line and "'http://elsewhere.example:99999/" in line, line
    assert code == 2, text
    assert "Traceback" not in text and "ValueError" not in text, text
    observed(f"{kind}: exit 2: {line[:160]}")


@pytest.mark.fault(
    GROUP,
    "the model server's key (OPENAI_API_KEY) in the environment of the processes a session starts",
    "absent from every compiler child and multiprocessing's resource tracker (/proc/PID/environ), and from "
    "the profiler's children",
)
def test_no_child_holds_the_key(monkeypatch, observed):
    from cuda_llm.engine.compile.compiler_pool import CompilerPool
    from cuda_llm.engine.core.settings import CompileSettings

    marker = "sk-child-env-marker-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", marker)

    async def children() -> dict[str, bytes]:
        pool = CompilerPool(CompileSettings(), workers=2)
        try:
            result = await pool.compile('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "sm_90")
            assert result.ok, result.error
            found = {}
            for proc in Path("/proc").iterdir():
                status = proc / "status"
                with contextlib.suppress(OSError):
                    if proc.name.isdigit() and f"\nPPid:\t{os.getpid()}\n" in status.read_text():
                        cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                        found[cmd[-60:]] = (proc / "environ").read_bytes()
            return found
        finally:
            pool.close()

    found = asyncio.run(children())
    assert len(found) >= 2, found.keys()
    holding = [cmd for cmd, env in found.items() if marker.encode() in env or b"OPENAI_API_KEY=" in env]
    assert not holding, holding
    assert os.environ["OPENAI_API_KEY"] == marker, "this process keeps its key"

    from cuda_llm.engine.counters.runner import NcuCounters

    probe = ["python3", "-c", "import os, sys; sys.stderr.write(os.environ.get('OPENAI_API_KEY', '<none>'))"]
    status, stderr = asyncio.run(NcuCounters._run(object(), probe, 30.0))  # type: ignore[arg-type]
    assert status == 0 and stderr == "<none>", stderr
    observed(f"{len(found)} children (compilers and the resource tracker) and the profiler's: none holds the key")
