"""Loopback HTTP servers that speak the Ollama and OpenAI chat protocols, with scripted replies.

The model providers are tested through the real `ollama` and `openai` client libraries on the
real wire; this server is the only stand-in. One server answers both protocols:

    Ollama   POST /api/chat (NDJSON, one line per chunk, flushed)   GET /api/tags, /api/version
    OpenAI   POST /v1/chat/completions (SSE `data: {...}`, `data: [DONE]`)   GET /v1/models

Usage (the `llm_server` fixture in tests/conftest.py starts and stops one per test):

    server.script(Reply.text("Hello, ", "world"), Reply.rate_limited(retry_after=1))
    OllamaProvider("m", host=server.url)             # Ollama wire
    OpenAIProvider("m", base_url=server.openai_url)  # OpenAI wire
    server.requests           # every request received, in arrival order (RecordedRequest)
    server.peak_concurrency   # the most chat requests in progress at once
    server.wait_idle()        # wait until every request has finished (e.g. after a hang-up)

Each chat request takes the next scripted `Reply` from the queue (or calls it, if it is a
callable taking the RecordedRequest); when the queue is empty, `server.default` answers, and if
that is None too, the request gets HTTP 400 "no scripted reply left" (a test mistake shows at
once instead of hanging). GET requests do not consume the queue.

Every loop is bounded: stalls end by themselves (or at shutdown), a held reply at its release (or at
shutdown), a gathering one after GATHER_LIMIT_S at the latest, an endless reply stops when the
client hangs up, after ENDLESS_MAX_CHUNKS chunks or after ENDLESS_MAX_S seconds, and a client
that stops reading is dropped after IDLE_CONNECTION_TIMEOUT_S. Only 127.0.0.1 is ever bound.

A reply with `encoding` is sent compressed (Content-Encoding) whatever the request's Accept-Encoding
said, as a server that ignores it does; `Reply.gzip_bomb` makes one line of any size, generated as it
is compressed, so neither side of the test holds it whole unless the client decodes it whole.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
import time
import urllib.parse
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = "127.0.0.1"
# An endless reply must end even if the client never hangs up: long enough for any test to cut
# it at max_tokens, short enough that a broken test fails in seconds, not minutes.
ENDLESS_MAX_CHUNKS = 200_000
ENDLESS_MAX_S = 10.0
# A connection whose client stops reading (or sends nothing on a kept-alive connection) is
# dropped after this long, so no handler thread outlives a test by more than this.
IDLE_CONNECTION_TIMEOUT_S = 5.0
# Teardown waits this long for handler threads; one still running after it is a server bug.
SHUTDOWN_JOIN_S = 5.0
# How often the accept loop checks for shutdown: stop() waits up to this long, once per test.
SERVE_POLL_S = 0.01
# A gathering reply (Reply.gathered) goes out after this even if its requests never all arrive: the
# test's own check then fails (they did not overlap) instead of the test hanging.
GATHER_LIMIT_S = 30.0
# The size of each chunk of a Reply.big() reply: a thousand chunks of a kilobyte for 1 MB.
BIG_CHUNK_CHARS = 1000

# A filled line (Reply.fill_chars) is generated and compressed this much at a time.
FILL_BLOCK_BYTES = 1 << 20
# The encodings the server compresses with (wbits for zlib); any other name is claimed in the header
# with the bytes left plain.
ENCODINGS_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
# Stands for the text of a filled line until it is written.
FILL_PLACEHOLDER = "@@fill@@"

# Stands for the invalid bytes in the JSON text of an invalid_utf8 chunk until it is written.
INVALID_UTF8_PLACEHOLDER = "@@not-utf-8@@"

NO_SCRIPT_MESSAGE = "loopback server: no scripted reply left (call server.script(...) or set server.default)"


@dataclass(frozen=True)
class Reply:
    """What the server does for one chat request. Build it with the class methods below.

    Chunk indexes (`stall_at`, `cut_at`, `malformed_at`, `error_at`) count the text chunks sent
    so far: 0 means before the first chunk, len(chunks) after the last one.
    """

    chunks: tuple[str, ...] = ()
    # Streamed before the text, apart from it: ollama's message.thinking, OpenAI-style
    # delta.reasoning_content (vLLM, SGLang). Fault indexes do not count these.
    reasoning: tuple[str, ...] = ()
    status: int = 200  # not 200: answer with this HTTP error instead of a stream
    # The error text for a status or an error line. "{key}" becomes the bearer key the client sent
    # (servers that quote a rejected key exist; the providers must scrub it).
    message: str = ""
    retry_after: str | None = None  # Retry-After header value for an error status
    stall_first_s: float = 0.0  # after the response headers, before the first chunk
    # After the response headers, no chunk until the test sets this (a model busy for exactly as long
    # as the test needs, however slow the machine); the server's stop ends the wait too.
    held_until: threading.Event | None = None
    # After the response headers, no chunk until this many chat requests have reached the server (the
    # requests of one round, of two processes), or GATHER_LIMIT_S has passed: then whatever overlap
    # a test checks for does not depend on how fast a busy machine sends them.
    gather: int = 0
    stall_at: int | None = None  # stall for stall_s before this chunk
    stall_s: float = 0.0
    cut_at: int | None = None  # drop the connection (incomplete chunked body) before this chunk
    malformed_at: int | None = None  # send a line that is not JSON before this chunk
    error_at: int | None = None  # send an error line/event (text: message) and end the stream
    invalid_utf8_at: int | None = None  # send a text chunk holding bytes that are not UTF-8
    repeat: bool = False  # repeat the chunks until the client hangs up (bounded, see module doc)
    chunk_delay_s: float = 0.0  # pause after each chunk (makes requests long enough to overlap)
    finish: bool = True  # send done:true / finish_reason + [DONE]; False: end cleanly without them
    done_reason: str = "stop"  # ollama done_reason; "length" maps to OpenAI finish_reason "length"
    usage: bool = True  # report token counts (eval_count / usage chunk)
    # Content-Encoding of the body (stream or error), sent whether or not the client asked for it:
    # "gzip", "x-gzip" and "deflate" compress it, any other name is only claimed (the bytes stay plain).
    encoding: str | None = None
    # One text chunk (or, with a status, the error message) of this many "x"s, before `chunks`:
    # generated FILL_BLOCK_BYTES at a time as it is written (and compressed), never held whole.
    fill_chars: int = 0

    @classmethod
    def text(cls, *chunks: str, **changes: Any) -> Reply:
        """A normal streamed reply; `changes` set any other field (chunk_delay_s=0.05, ...)."""
        return cls(chunks=tuple(chunks), **changes)

    @classmethod
    def thinking(cls, reasoning: tuple[str, ...], *chunks: str, **changes: Any) -> Reply:
        """A reasoning model: `reasoning` streamed apart first, then the text."""
        return cls(chunks=tuple(chunks), reasoning=tuple(reasoning), **changes)

    @classmethod
    def status_error(cls, status: int, message: str, retry_after: float | str | None = None) -> Reply:
        return cls(status=status, message=message, retry_after=None if retry_after is None else str(retry_after))

    @classmethod
    def not_found(cls, message: str = "") -> Reply:
        """HTTP 404 as a server answers for an unknown model (the text names the model if empty)."""
        return cls(status=404, message=message)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1) -> Reply:
        return cls.status_error(429, "rate limit reached, slow down", retry_after)

    @classmethod
    def server_error(cls, status: int = 500, message: str = "internal server error") -> Reply:
        return cls.status_error(status, message)

    @classmethod
    def stall_first(cls, seconds: float, *chunks: str) -> Reply:
        """Headers at once, then no token for `seconds` (a model loading, a queue)."""
        return cls(chunks=tuple(chunks) or ("late",), stall_first_s=seconds)

    @classmethod
    def held(cls, release: threading.Event, *chunks: str) -> Reply:
        """Headers at once, then no token until `release` is set."""
        return cls(chunks=tuple(chunks) or ("late",), held_until=release)

    @classmethod
    def gathered(cls, requests: int, *chunks: str, **changes: Any) -> Reply:
        """Headers at once, then no token until `requests` chat requests have arrived (at most
        GATHER_LIMIT_S): requests sent together are then all in flight together."""
        return cls(chunks=tuple(chunks) or ("late",), gather=requests, **changes)

    @classmethod
    def stall_mid(cls, seconds: float, *chunks: str, at: int = 1) -> Reply:
        """Some tokens, then silence for `seconds`, then the rest."""
        return cls(chunks=tuple(chunks) or ("first ", "second"), stall_at=at, stall_s=seconds)

    @classmethod
    def cut(cls, *chunks: str, at: int = 1) -> Reply:
        """Drop the connection mid-reply, after `at` chunks (no end of the chunked body)."""
        return cls(chunks=tuple(chunks) or ("partial ", "never sent"), cut_at=at)

    @classmethod
    def unfinished(cls, *chunks: str) -> Reply:
        """A stream that ends cleanly but without done:true / finish_reason / [DONE]."""
        return cls(chunks=tuple(chunks) or ("no end",), finish=False)

    @classmethod
    def malformed(cls, *chunks: str, at: int = 1) -> Reply:
        return cls(chunks=tuple(chunks) or ("ok ", "lost"), malformed_at=at)

    @classmethod
    def error_line(cls, message: str = "model runner crashed", *chunks: str, at: int = 1) -> Reply:
        """An in-stream error: ollama's {"error": ...} line, OpenAI's data: {"error": {...}} event."""
        return cls(chunks=tuple(chunks) or ("ok ", "lost"), error_at=at, message=message)

    @classmethod
    def invalid_utf8(cls, *chunks: str, at: int = 1) -> Reply:
        """A text chunk whose JSON string holds the raw bytes 0xff 0xfe (no UTF-8 spells them), as a
        server that splits a multi-byte character between tokens can send."""
        return cls(chunks=tuple(chunks) or ("ok ", "rest"), invalid_utf8_at=at)

    @classmethod
    def empty(cls) -> Reply:
        """A well-formed, finished reply with no text."""
        return cls(chunks=())

    @classmethod
    def big(cls, size: int = 1_000_000, **changes: Any) -> Reply:
        """`size` characters in chunks of BIG_CHUNK_CHARS (each chunk counts as one token)."""
        line = ("x" * (BIG_CHUNK_CHARS - 1)) + "\n"
        whole, rest = divmod(size, BIG_CHUNK_CHARS)
        chunks = (line,) * whole + (("y" * rest,) if rest else ())
        return cls(chunks=chunks, **changes)

    @classmethod
    def gzip_bomb(cls, size: int, status: int = 200) -> Reply:
        """One line holding `size` characters, gzip-compressed (about 1000:1): a stream line, or with a
        status the body of that HTTP error."""
        return cls(fill_chars=size, encoding="gzip", status=status)

    @classmethod
    def endless(cls, chunk: str = "again ") -> Reply:
        return cls(chunks=(chunk,), repeat=True)

    @classmethod
    def code_blocks(cls, n: int = 10) -> Reply:
        """A reply with `n` fenced CUDA blocks, each streamed in a few chunks."""
        chunks: list[str] = ["Here are the kernels.\n\n"]
        for i in range(n):
            chunks += [
                "```cuda\n",
                f'extern "C" __global__ void k{i}(float* out, int n) {{\n',
                f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = {i}.0f;\n}}\n",
                "```\n\n",
            ]
        return cls(chunks=tuple(chunks))

    def text_content(self) -> str:
        """The full text a client receives if the reply is played to the end."""
        return "x" * self.fill_chars + "".join(self.chunks)


@dataclass
class RecordedRequest:
    """One request the server received. `finished` and `outcome` are set when it is done."""

    index: int
    method: str
    path: str
    body: Any  # the parsed JSON body (None for GET)
    headers: dict[str, str]
    started: float  # time.monotonic() at arrival
    finished: float | None = None
    # "complete", "status" (an HTTP error was sent), "cut", "error_line", "client_gone" (the client
    # hung up), "limit" (an endless reply hit the server's bound), "shutdown"
    outcome: str | None = None
    chunks_sent: int = 0

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def overlaps(self, other: RecordedRequest) -> bool:
        end_self = self.finished if self.finished is not None else float("inf")
        end_other = other.finished if other.finished is not None else float("inf")
        return self.started < end_other and other.started < end_self


Responder = Reply | Callable[[RecordedRequest], Reply]


class LoopbackLLMServer:
    """A ThreadingHTTPServer on 127.0.0.1:<free port> in a background thread. Use as a context
    manager, or start()/stop(). See the module doc for the API."""

    def __init__(self, models: tuple[str, ...] = ("loop-model", "qwen2.5-coder:32b")) -> None:
        self.models = models  # what /api/tags and /v1/models list
        self.default: Responder | None = None
        # Answer HTTP 400 to an OpenAI request that carries stream_options, as some older
        # OpenAI-compatible servers do (the provider must fall back without it).
        self.reject_stream_options = False
        self._queue: deque[Responder] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0
        self._peak = 0
        self._stop = threading.Event()
        self._connections: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.handler_errors: list[BaseException] = []  # unexpected exceptions in handler threads

    # ----- lifecycle -----

    def start(self) -> LoopbackLLMServer:
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": SERVE_POLL_S}, name="loopback-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections, and wait for every handler thread (bounded)."""
        if self._httpd is None:
            return
        self._stop.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
            threads = list(self._handler_threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(SHUTDOWN_JOIN_S)
        deadline = time.monotonic() + SHUTDOWN_JOIN_S
        stuck = []
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                stuck.append(t.name)
        self._httpd = None
        if stuck:
            raise RuntimeError(f"loopback server: handler threads still running after shutdown: {stuck}")
        if self.handler_errors:
            raise RuntimeError(f"loopback server: handler errors: {self.handler_errors!r}")

    def __enter__(self) -> LoopbackLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- the test-facing API -----

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The Ollama host URL, e.g. http://127.0.0.1:40123."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI base URL, e.g. http://127.0.0.1:40123/v1."""
        return f"{self.url}/v1"

    def script(self, *replies: Responder) -> None:
        """Queue replies for the next chat requests, in order (in addition to any queued)."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (GET and POST), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def peak_concurrency(self) -> int:
        """The most chat requests that were in progress at the same moment."""
        with self._lock:
            return self._peak

    def wait_idle(self, timeout: float = SHUTDOWN_JOIN_S) -> bool:
        """Wait until no request is in progress; False if that did not happen within `timeout`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    # ----- used by the handler -----

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._handler_threads.add(threading.current_thread())

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _begin(self, method: str, path: str, body: Any, headers: dict[str, str]) -> RecordedRequest:
        with self._lock:
            rec = RecordedRequest(len(self._requests), method, path, body, headers, time.monotonic())
            self._requests.append(rec)
            if method == "POST":
                self._active += 1
                self._peak = max(self._peak, self._active)
            return rec

    def _end(self, rec: RecordedRequest, outcome: str) -> None:
        with self._idle:
            rec.finished = time.monotonic()
            rec.outcome = outcome
            if rec.method == "POST":
                self._active -= 1
            self._idle.notify_all()

    def _next_reply(self, rec: RecordedRequest) -> Reply | None:
        with self._lock:
            responder = self._queue.popleft() if self._queue else self.default
        if responder is None:
            return None
        return responder if isinstance(responder, Reply) else responder(rec)

    def _pause(self, seconds: float) -> bool:
        """Sleep, but wake at shutdown; True if the server is stopping."""
        return self._stop.wait(seconds) if seconds > 0 else self._stop.is_set()

    def _hold(self, reply: Reply) -> bool:
        """Wait for the reply's release and for its gathering, but wake at shutdown; True if the server
        is stopping."""
        release = reply.held_until
        while release is not None and not release.wait(SERVE_POLL_S):
            if self._stop.is_set():
                return True
        deadline = time.monotonic() + GATHER_LIMIT_S
        while len(self.chat_requests) < reply.gather and time.monotonic() < deadline:
            if self._stop.wait(SERVE_POLL_S):
                return True
        return self._stop.is_set()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # stop() joins them itself, with a bound

    def __init__(self, owner: LoopbackLLMServer) -> None:
        self.owner = owner
        super().__init__((LOOPBACK, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up or resets is what several tests do on purpose; anything else is
        # a server bug, kept for the test to see and printed as usual.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        if exc is not None:
            self.owner.handler_errors.append(exc)
        super().handle_error(request, client_address)


# ----- the two wire formats -----


@dataclass(frozen=True)
class _Stats:
    model: str
    prompt_tokens: int
    completion_tokens: int


class _OllamaWire:
    content_type = "application/x-ndjson"

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"error": message}

    @staticmethod
    def not_found_message(model: str) -> str:
        return f'model "{model}" not found, try pulling it first'

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def chunk(self, model: str, text: str) -> bytes:
        line = {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": text}, "done": False}
        return _line(line)

    def reasoning(self, model: str, text: str) -> bytes:
        message = {"role": "assistant", "content": "", "thinking": text}
        return _line({"model": model, "created_at": _now(), "message": message, "done": False})

    def finish(self, reply: Reply, stats: _Stats) -> bytes:
        last: dict[str, Any] = {
            "model": stats.model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reply.done_reason,
            "total_duration": 1_000_000,
        }
        if reply.usage:
            last |= {"prompt_eval_count": stats.prompt_tokens, "eval_count": stats.completion_tokens}
        return _line(last)

    @staticmethod
    def error_line(message: str) -> bytes:
        return _line({"error": message})

    @staticmethod
    def malformed() -> bytes:
        return b'{"model": "m", "message": {"content": "unterminated\n'


class _OpenAIWire:
    content_type = "text/event-stream"

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}
        return {"error": {"message": message, "type": kind.get(status, "server_error"), "code": None}}

    @staticmethod
    def not_found_message(model: str) -> str:
        return f"The model `{model}` does not exist or you do not have access to it."

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    @staticmethod
    def _event(payload: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def _chunk(self, model: str, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    def chunk(self, model: str, text: str) -> bytes:
        return self._event(self._chunk(model, {"role": "assistant", "content": text}, None))

    def reasoning(self, model: str, text: str) -> bytes:
        return self._event(self._chunk(model, {"role": "assistant", "reasoning_content": text}, None))

    def finish(self, reply: Reply, stats: _Stats) -> bytes:
        reason = "length" if reply.done_reason == "length" else "stop"
        out = self._event(self._chunk(stats.model, {}, reason))
        if reply.usage and self.include_usage:
            usage = {
                "prompt_tokens": stats.prompt_tokens,
                "completion_tokens": stats.completion_tokens,
                "total_tokens": stats.prompt_tokens + stats.completion_tokens,
            }
            out += self._event(self._chunk(stats.model, {}, None) | {"choices": [], "usage": usage})
        return out + b"data: [DONE]\n\n"

    def error_line(self, message: str) -> bytes:
        return self._event({"error": {"message": message, "type": "server_error", "code": None}})

    @staticmethod
    def malformed() -> bytes:
        return b'data: {"choices": [{"delta": {"content": "unterminated\n\n'


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _ClientGone(Exception):
    """The client closed the connection while we were writing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streaming, so a cut connection is visible as one
    timeout = IDLE_CONNECTION_TIMEOUT_S
    server: _HTTPServer
    _encoder: Any = None  # the compressor of the body being written (Reply.encoding), if any

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows what matters

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._untrack(self.connection)

    @property
    def owner(self) -> LoopbackLLMServer:
        return self.server.owner

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def parse_request(self) -> bool:
        # A forward proxy is sent the whole URL ("POST http://model.invalid:11434/api/chat"): this
        # server answers it as the model server that URL names, so it stands in for a proxy too.
        ok = super().parse_request()
        if ok and self.path.startswith(("http://", "https://")):
            self.path = urllib.parse.urlsplit(self.path)._replace(scheme="", netloc="").geturl() or "/"
        return ok

    # ----- GET: model lists and version -----

    def do_GET(self) -> None:
        rec = self.owner._begin("GET", self.path, None, self._headers())
        models = self.owner.models
        if self.path == "/api/tags":
            payload: dict[str, Any] = {"models": [{"name": m, "model": m, "size": 1} for m in models]}
        elif self.path == "/api/version":
            payload = {"version": "0.0.0-loopback"}
        elif self.path == "/v1/models":
            payload = {
                "object": "list",
                "data": [{"id": m, "object": "model", "created": 0, "owned_by": "loopback"} for m in models],
            }
        else:
            self._send_json(404, {"error": f"no route for GET {self.path}"})
            self.owner._end(rec, "status")
            return
        self._send_json(200, payload)
        self.owner._end(rec, "complete")

    # ----- POST: chat -----

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        rec = self.owner._begin("POST", self.path, body, self._headers())
        wire: _OllamaWire | _OpenAIWire
        if self.path == "/api/chat" and isinstance(body, dict):
            wire = _OllamaWire(body)
        elif self.path == "/v1/chat/completions" and isinstance(body, dict):
            wire = _OpenAIWire(body)
            if self.owner.reject_stream_options and "stream_options" in body:
                self._send_json(400, wire.error_body(400, "Unrecognized request argument supplied: stream_options"))
                self.owner._end(rec, "status")
                return
        else:
            self._send_json(404, {"error": f"no route for POST {self.path} (or the body is not a JSON object)"})
            self.owner._end(rec, "status")
            return
        reply = self.owner._next_reply(rec)
        if reply is None:
            self._send_json(400, wire.error_body(400, NO_SCRIPT_MESSAGE))
            self.owner._end(rec, "status")
            return
        try:
            outcome = self._play(wire, reply, rec)
        except _ClientGone:
            outcome = "client_gone"
            self.close_connection = True
        except TimeoutError:
            outcome = "client_gone"  # it stopped reading for IDLE_CONNECTION_TIMEOUT_S
            self.close_connection = True
        self.owner._end(rec, outcome)

    def _play(self, wire: _OllamaWire | _OpenAIWire, reply: Reply, rec: RecordedRequest) -> str:
        model = rec.model or "?"
        self._encoder = None
        if reply.status != 200:
            message = reply.message or (wire.not_found_message(model) if reply.status == 404 else "error")
            message = message.replace("{key}", self._bearer())
            extra = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            if reply.fill_chars:
                self._start_chunked(reply.status, "application/json", reply.encoding, extra)
                self._write_filled(json.dumps(wire.error_body(reply.status, FILL_PLACEHOLDER)).encode(), reply)
                self._end_body()
            else:
                self._send_json(reply.status, wire.error_body(reply.status, message), extra, reply.encoding)
            return "status"

        self._start_chunked(200, wire.content_type, reply.encoding)
        if self.owner._pause(reply.stall_first_s) or self.owner._hold(reply):
            return "shutdown"

        started = time.monotonic()
        sent = 0
        for thought in reply.reasoning:
            self._write(wire.reasoning(model, thought))
            sent += 1
            rec.chunks_sent = sent
            if self.owner._pause(reply.chunk_delay_s):
                return "shutdown"
        if reply.fill_chars:
            self._write_filled(wire.chunk(model, FILL_PLACEHOLDER), reply)
            sent += 1
            rec.chunks_sent = sent
        for i, text in enumerate(self._pieces(reply)):
            outcome = self._event_before(wire, reply, i, model)
            if outcome is not None:
                return outcome
            self._write(wire.chunk(model, text))
            sent += 1
            rec.chunks_sent = sent
            if self.owner._pause(reply.chunk_delay_s):
                return "shutdown"
            if reply.repeat and time.monotonic() - started > ENDLESS_MAX_S:
                self._end_body()
                return "limit"
        if reply.repeat:
            self._end_body()
            return "limit"
        outcome = self._event_before(wire, reply, len(reply.chunks), model)
        if outcome is not None:
            return outcome
        if reply.finish:
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in rec.messages)
            self._write(wire.finish(reply, _Stats(model, prompt_tokens, sent)))
        self._end_body()
        return "complete"

    def _pieces(self, reply: Reply) -> Iterator[str]:
        if reply.repeat:
            return itertools.islice(itertools.cycle(reply.chunks or ("again ",)), ENDLESS_MAX_CHUNKS)
        return iter(reply.chunks)

    def _event_before(self, wire: _OllamaWire | _OpenAIWire, reply: Reply, i: int, model: str) -> str | None:
        """Play the scripted fault due before chunk i; return an outcome if it ends the reply."""
        if reply.cut_at == i:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return "cut"
        if reply.malformed_at == i:
            self._write(wire.malformed())
        if reply.invalid_utf8_at == i:
            self._write(
                wire.chunk(model, INVALID_UTF8_PLACEHOLDER).replace(INVALID_UTF8_PLACEHOLDER.encode(), b"\xff\xfe")
            )
        if reply.error_at == i:
            self._write(wire.error_line(reply.message.replace("{key}", self._bearer())))
            self._end_body()
            return "error_line"
        if reply.stall_at == i and self.owner._pause(reply.stall_s):
            return "shutdown"
        return None

    # ----- low-level writing -----

    def _bearer(self) -> str:
        auth = self.headers.get("authorization") or ""
        return auth.removeprefix("Bearer ").strip()

    def _send_json(
        self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None, encoding: str | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        if encoding in ENCODINGS_WBITS:
            encoder = zlib.compressobj(wbits=ENCODINGS_WBITS[encoding])
            data = encoder.compress(data) + encoder.flush()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if encoding is not None:
            self.send_header("Content-Encoding", encoding)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)
            self._flush()

    def _start_chunked(
        self, status: int, content_type: str, encoding: str | None, extra: dict[str, str] | None = None
    ) -> None:
        """The headers of a chunked body; what `_write` sends after them is compressed with `encoding`."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        if encoding is not None:
            self.send_header("Content-Encoding", encoding)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self._flush()
        self._encoder = zlib.compressobj(wbits=ENCODINGS_WBITS[encoding]) if encoding in ENCODINGS_WBITS else None

    def _write(self, data: bytes, flush: bool = True) -> None:
        """One HTTP chunk, flushed at once (the client sees each line as it is produced). With an
        encoding, the compressed bytes so far (all of them unless `flush` is False)."""
        if self._encoder is not None:
            data = self._encoder.compress(data) + (self._encoder.flush(zlib.Z_SYNC_FLUSH) if flush else b"")
            if not data:
                return  # an empty chunk would end the body
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self._flush()
        except OSError as exc:  # BrokenPipe, ConnectionReset: the client hung up
            raise _ClientGone from exc

    def _write_filled(self, template: bytes, reply: Reply) -> None:
        """`template` with FILL_PLACEHOLDER replaced by reply.fill_chars "x"s, written a block at a time."""
        head, tail = template.split(FILL_PLACEHOLDER.encode())
        self._write(head, flush=False)
        block = b"x" * min(FILL_BLOCK_BYTES, reply.fill_chars)
        whole, rest = divmod(reply.fill_chars, len(block))
        for _ in range(whole):
            if self.owner._stop.is_set():
                raise _ClientGone  # shutting down: the client is dropped anyway
            self._write(block, flush=False)
        self._write(block[:rest] + tail)

    def _end_body(self) -> None:
        try:
            if self._encoder is not None:
                rest = self._encoder.flush()
                self._encoder = None
                self.wfile.write(b"%x\r\n%s\r\n" % (len(rest), rest))
            self.wfile.write(b"0\r\n\r\n")
            self._flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _flush(self) -> None:
        self.wfile.flush()


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (connection refused). The port was free a moment
    ago; another process could take it, which on a test machine practically never happens."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
    return f"http://{LOOPBACK}:{port}"


# A host name under the reserved .invalid TLD (RFC 6761): resolution fails without network traffic.
UNRESOLVABLE_URL = "http://cuda-llm-test.invalid:11434"


__all__ = [
    "ENDLESS_MAX_CHUNKS",
    "ENDLESS_MAX_S",
    "UNRESOLVABLE_URL",
    "LoopbackLLMServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "closed_port_url",
]
