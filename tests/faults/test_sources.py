"""Hostile and broken kernel sources, compile side (no GPU): whole compile-only sessions with scripted
replies, and `cuda-llm eval FILE`. Each ends with the candidate recorded with the right status and a
message the model can act on, and the next good candidate compiled and bound as usual."""

from __future__ import annotations

import json
import time

import pytest
from llm_servers import INVALID_UTF8_PLACEHOLDER, Reply
from scripted import GOOD_KERNEL, GOOD_PLAN, chunked, reply
from session_driver import options, run_session

from cuda_llm.app.cli.main import main as cuda_llm
from cuda_llm.engine.core.settings import CompileSettings, GenerateOptions, Settings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.store.sessions import SessionStore
from tests.compile.kernels import TEMPLATE_BOMB

from .helpers import integrity, short

GROUP = "kernels"
GOOD = chunked(reply())
# The bomb's templates, instantiated from a kernel whose plan binds to vector_add (a kernel the plan
# cannot bind is refused before compiling, and the bomb would never reach NVRTC).
BOMB_KERNEL = TEMPLATE_BOMB.rsplit('extern "C"', 1)[0] + GOOD_KERNEL.replace(
    "int i = (", "if (n < 0) c[0] = (float)Sum<Pow2<18>::type>::v;\n    int i = ("
)
# A source of 5 MB: the kernel, then 50,000 helper functions (code, not comment: what an unrolling
# model writes, and what costs the kernel-signature parser the most).
FIVE_MB_KERNEL = (
    GOOD_KERNEL
    + "\n"
    + "".join(
        f"__device__ float helper_{i:05d}(float x) {{ return x * {i}.0f + 1.0f; }} // {'x' * 36}\n"
        for i in range(50_000)
    )
)


async def one_bad_then_good(tmp_path, server, bad: Reply, *, settings: Settings | None = None, **loop):
    """One round, one candidate: `bad` first, then a repair that gets a good reply. Returns
    (result, recorder, judgements by label)."""
    server.script(bad)
    server.default = GOOD
    extra = {"settings": settings} if settings else {}
    opts = options(tmp_path, "ollama:loop-model", candidates=1, rounds=1, repairs=1, **loop)
    result, rec = await run_session(opts, host=server.url, **extra)
    judged = {e.judgement.label: e.judgement for e in rec.of(ev.CandidateJudged)}
    assert result.status == "finished", result.reason
    assert judged["r1-fix1-1"].status == "compiled", "the next good candidate compiles and binds"
    assert integrity(tmp_path / "sessions.db") == "ok"
    return result, rec, judged


def repair_prompt(server) -> str:
    return server.chat_requests[1].messages[-1]["content"]


def evaluate(capsys, *argv: str) -> tuple[int, dict]:
    """`cuda-llm eval ... --compile-only --json` in process: (exit code, the judgement)."""
    code = cuda_llm(["eval", "vector_add", *argv, "--compile-only", "--arch", "sm_90", "--json"])
    return code, json.loads(capsys.readouterr().out)["judgement"]


@pytest.mark.fault(
    GROUP,
    "template-recursion compile bomb",
    "NVRTC killed at the compile time limit; compile_error 'timed out'; the next candidate compiles",
)
async def test_template_bomb(tmp_path, llm_server, observed):
    # One compiler process, so the candidate after the bomb runs in the process that replaced it.
    settings = Settings(compile=CompileSettings(timeout_s=2.0, max_workers=1))
    started = time.monotonic()
    _result, _rec, judged = await one_bad_then_good(
        tmp_path, llm_server, chunked(reply(BOMB_KERNEL)), settings=settings
    )
    took = time.monotonic() - started
    bomb = judged["r1-1"]
    assert bomb.status == "compile_error"
    assert bomb.message == "compile timed out after 2 s (template recursion?)"
    assert bomb.compile is not None and bomb.compile.timed_out
    assert bomb.message in repair_prompt(llm_server)
    observed(f"compile_error {bomb.message!r}; the repair compiled; session {took:.1f} s")


@pytest.mark.fault(
    GROUP,
    "a 5 MB source in a reply (max_tokens large enough to take it whole)",
    "format error: the reply is over the 1 MiB reply limit, said with the size; recorded; next compiles",
)
async def test_five_megabyte_source_in_a_reply(tmp_path, llm_server, observed):
    gen = GenerateOptions(timeout_s=10.0, first_token_timeout_s=5.0, max_tokens=200_000)
    huge = chunked(reply(FIVE_MB_KERNEL), size=64_000)
    _result, _rec, judged = await one_bad_then_good(tmp_path, llm_server, huge, generate=gen)
    big = judged["r1-1"]
    assert big.status == "format_error" and "over the 1048576-byte limit" in big.message
    store = SessionStore(tmp_path / "sessions.db")
    try:
        kept = next(c for c in store.candidates(1) if c.label == "r1-1")
    finally:
        store.close()
    assert kept.reply == reply(FIVE_MB_KERNEL), "the reply is recorded as received"
    assert len(repair_prompt(llm_server)) < 30_000, "the source is not quoted back"
    observed(f"format_error {big.message[:70]!r}...; reply kept; next compiled")


@pytest.mark.fault(
    GROUP,
    "a 5 MB source through `cuda-llm eval FILE.cu --plan`",
    "format error at once, naming the size and the limit; exit code 1",
)
def test_five_megabyte_source_file(tmp_path, capsys, monkeypatch, observed):
    from cuda_llm.engine.judge import judge as judge_module

    cu, plan = tmp_path / "big.cu", tmp_path / "plan.json"
    cu.write_text(FIVE_MB_KERNEL)
    plan.write_text(json.dumps(GOOD_PLAN))
    # "At once" as an order, not a time (which a busy machine stretches): the size is checked before
    # the kernels' signatures are parsed (seconds on 5 MB), so the parser never sees the source.
    parsed: list[int] = []
    real_parse = judge_module.parse_kernels
    monkeypatch.setattr(judge_module, "parse_kernels", lambda source: parsed.append(len(source)) or real_parse(source))
    started = time.monotonic()
    code, judgement = evaluate(capsys, str(cu), "--plan", str(plan))
    took = time.monotonic() - started
    assert code == 1 and judgement["status"] == "format_error"
    assert "a kernel source may be at most 262,144 bytes" in judgement["message"]
    assert len(FIVE_MB_KERNEL) not in parsed, "the 5 MB source's signatures were parsed before its size was checked"
    observed(f"format_error {judgement['message']!r} in {took:.2f} s; exit 1")


@pytest.mark.fault(
    GROUP,
    "a source with a NUL byte (in a reply)",
    "format error naming the line and column of the NUL; next compiles",
)
async def test_nul_byte_in_a_reply(tmp_path, llm_server, observed):
    bad = chunked(reply(GOOD_KERNEL.replace("int i =", "int\x00 i =")))
    _result, _rec, judged = await one_bad_then_good(tmp_path, llm_server, bad)
    nul = judged["r1-1"]
    assert nul.status == "format_error" and "NUL byte (U+0000) at line 4, column 8" in nul.message
    assert nul.message in repair_prompt(llm_server)
    observed(f"format_error {nul.message[:90]!r}...; next compiled")


@pytest.mark.fault(
    GROUP,
    "a source with a NUL byte (`cuda-llm eval FILE.cu --plan`)",
    "format error naming the line; exit code 1",
)
def test_nul_byte_in_a_file(tmp_path, capsys, observed):
    cu, plan = tmp_path / "nul.cu", tmp_path / "plan.json"
    cu.write_text(GOOD_KERNEL.replace("int i =", "int\x00 i ="))
    plan.write_text(json.dumps(GOOD_PLAN))
    code, judgement = evaluate(capsys, str(cu), "--plan", str(plan))
    assert code == 1 and judgement["status"] == "format_error"
    assert judgement["message"] == "the source contains a NUL byte (line 4)"
    observed(f"format_error {judgement['message']!r}; exit 1")


@pytest.mark.fault(
    GROUP,
    "invalid UTF-8 in a reply: a lone surrogate (\\udcff escape in the stream's JSON)",
    "recorded exactly; format error naming the code point, line and column; next compiles",
)
async def test_lone_surrogate_in_a_reply(tmp_path, llm_server, observed):
    text = reply(GOOD_KERNEL.replace("int i =", "int \udcff i ="))
    _result, _rec, judged = await one_bad_then_good(tmp_path, llm_server, chunked(text))
    bad = judged["r1-1"]
    assert bad.status == "format_error" and "lone surrogate (U+DCFF) at line 4, column 9" in bad.message
    store = SessionStore(tmp_path / "sessions.db")
    try:
        kept = next(c for c in store.candidates(1) if c.label == "r1-1")
    finally:
        store.close()
    assert kept.reply == text, "the reply is kept exactly, surrogate and all"
    observed(f"format_error {bad.message[:80]!r}...; reply kept exactly; next compiled")


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(
            "ollama:loop-model",
            marks=pytest.mark.fault(
                GROUP,
                "invalid UTF-8 in a reply: raw bytes 0xff 0xfe in an NDJSON line (Ollama)",
                "the client decodes them as U+FFFD; the candidate is judged normally (here: in a comment, compiles)",
            ),
            id="ollama",
        ),
        pytest.param(
            "openai:loop-model",
            marks=pytest.mark.fault(
                GROUP,
                "invalid UTF-8 in a reply: raw bytes 0xff 0xfe in an SSE event (OpenAI)",
                "a protocol error naming the server (the client's decoder is strict), retried; the session finishes",
            ),
            id="openai",
        ),
    ],
)
async def test_raw_invalid_utf8_in_a_reply(tmp_path, llm_server, observed, model):
    text = reply(GOOD_KERNEL.replace("int i =", "// a comment with a split character: \nint i ="))
    head, tail = text.split("\nint i =")
    llm_server.script(Reply.invalid_utf8(head, "\nint i =" + tail, at=1))  # the bytes end the comment
    llm_server.default = GOOD
    where = {"host": llm_server.url} if model.startswith("ollama:") else {"base_url": llm_server.openai_url}
    result, rec = await run_session(options(tmp_path, model, candidates=1, rounds=1, repairs=1), **where)
    assert result.status == "finished", result.reason
    statuses = rec.final_statuses()
    received = [e.completion.text for e in rec.of(ev.ReplyReceived)]
    if model.startswith("ollama:"):
        assert statuses == {"baseline": "compiled", "r1-1": "compiled"}
        assert "split character: \ufffd\ufffd" in received[0]
        assert INVALID_UTF8_PLACEHOLDER not in received[0]
        observed("decoded as U+FFFD U+FFFD; the candidate compiled (the bytes sat in a comment)")
    else:
        (retry,) = rec.of(ev.RequestRetrying)
        assert "malformed stream (UnicodeDecodeError" in retry.message and llm_server.openai_url in retry.message
        assert statuses == {"baseline": "compiled", "r1-1": "compiled"}
        observed(f"retried after {retry.message[:110]!r}...; finished")


@pytest.mark.fault(
    GROUP,
    "invalid UTF-8 through `cuda-llm eval FILE.md`",
    "format error saying the file is not UTF-8 text; exit code 1",
)
def test_invalid_utf8_file(tmp_path, capsys, observed):
    md = tmp_path / "reply.md"
    md.write_bytes(reply(GOOD_KERNEL.replace("int i =", "int \xff i =")).encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    code, judgement = evaluate(capsys, str(md))
    assert code == 1 and judgement["status"] == "format_error"
    assert judgement["message"] == f"{md} is not UTF-8 text"
    observed(f"format_error {short(judgement['message'], tmp_path)!r}; exit 1")


@pytest.mark.fault(
    GROUP,
    "a kernel named like a harness symbol (harness_scrub_shared)",
    "compiles and binds like any other name (the harness's module is separate)",
)
async def test_kernel_named_like_a_harness_symbol(tmp_path, llm_server, observed):
    kernel = GOOD_KERNEL.replace("vadd4", "harness_scrub_shared")
    plan = {"launches": [dict(GOOD_PLAN["launches"][0], kernel="harness_scrub_shared")]}
    llm_server.default = chunked(reply(kernel, plan))
    result, rec = await run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), host=llm_server.url)
    assert result.status == "finished"
    judged = {e.judgement.label: e.judgement for e in rec.of(ev.CandidateJudged)}
    j = judged["r1-1"]
    assert j.status == "compiled" and [k.name for k in j.compile.kernels] == ["harness_scrub_shared"]
    observed(f"{j.status}: {j.message}")
