"""Turning what goes wrong with an HTTP model server into a ModelError: one line that names the
server and says what to do. Shared by the ollama and OpenAI providers; each supplies its hints."""

from __future__ import annotations

import asyncio
import difflib
import re
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

from cuda_llm.engine.llm.base import ErrorKind, ModelError

# A server's own error text is quoted up to this length: enough for "context length exceeded
# (9000 > 8192)", short enough to keep the message on one line in a narrow terminal pane.
DETAIL_CHARS = 200
# What replaces a secret that a server echoed back (some servers quote the key they rejected).
REDACTED = "[redacted]"
# An unknown model's message lists the server's models: enough to spot the right spelling, few
# enough for one line; the listing gets a short time of its own (the server has just answered).
MODELS_LISTED = 10
MODEL_LISTING_TIMEOUT_S = 3.0
# Messages resolvers put in errors when a host name does not resolve (glibc, macOS, Windows).
_DNS_PHRASES = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "getaddrinfo failed",
    "no address associated with hostname",
)


@dataclass(frozen=True)
class Server:
    """How messages refer to one server, and the hints that fit it."""

    label: str  # "the ollama server at http://127.0.0.1:11434"
    reach_hint: str  # what to check when it cannot be reached
    host_hint: str  # where the host name came from (for a DNS failure)
    key_hint: str  # what to set when the key is refused
    not_found: Callable[[str], str]  # the message for an unknown model
    # Scrubbed from every server-supplied text; never shown, not even in this object's repr.
    secret: str | None = field(default=None, repr=False)

    def detail(self, text: object) -> str:
        """A server-supplied text made safe for a one-line message."""
        out = str(text)
        if self.secret:
            out = out.replace(self.secret, REDACTED)
        out = re.sub(r"\s+", " ", out).strip()
        return out if len(out) <= DETAIL_CHARS else out[: DETAIL_CHARS - 3] + "..."

    # ----- one function per situation -----

    def unreachable(self, exc: BaseException, connect_timeout: bool = False) -> ModelError:
        if is_dns_failure(exc):
            return ModelError("unreachable", f"cannot resolve the host name of {self.label}: {self.host_hint}")
        if connect_timeout:
            return ModelError("unreachable", f"timed out connecting to {self.label}: {self.reach_hint}")
        return ModelError("unreachable", f"cannot reach {self.label}: {self.reach_hint}")

    def timeout(self, first_token: bool, limit_s: float) -> ModelError:
        if first_token:
            return ModelError(
                "timeout",
                f"no reply from {self.label} within {limit_s:g} s: the model may still be loading, "
                "or the server is busy",
            )
        # Not retried: the same server would be as slow again, and each try would hold the request
        # for limit_s more (a server trickling a token a second held one for three tries of 600 s).
        return ModelError(
            "too_slow",
            f"the reply from {self.label} was still streaming {limit_s:g} s after its first token: "
            "lower max_tokens or use a faster model",
        )

    def stalled(self, idle_s: float) -> ModelError:
        return ModelError(
            "timeout",
            f"{self.label} sent nothing for {idle_s:g} s in the middle of a reply: the server may be overloaded",
        )

    def io_timeout(self) -> ModelError:
        return ModelError("timeout", f"the connection to {self.label} timed out: the server or the network is busy")

    def http_status(self, status: int, detail: object, model: str, retry_after_s: float | None = None) -> ModelError:
        kind = status_kind(status)
        text = self.detail(detail)
        if kind == "not_found":
            return ModelError(kind, self.not_found(model))
        if kind == "auth":
            return ModelError(kind, f"{self.label} refused the request (HTTP {status}: {text}): {self.key_hint}")
        if kind == "rate_limited":
            wait = f", retry after {retry_after_s:g} s" if retry_after_s is not None else ""
            return ModelError(
                kind,
                f"{self.label} is rate limiting requests (HTTP 429{wait}): lower --candidates if it persists",
                retry_after_s=retry_after_s,
            )
        if kind == "server_error":
            return ModelError(
                kind, f"{self.label} failed (HTTP {status}: {text}): check the server's log", retry_after_s
            )
        if kind == "timeout":
            return ModelError(kind, f"{self.label} timed out the request (HTTP {status}): the server is busy")
        return ModelError(
            kind,
            f"{self.label} refused the request (HTTP {status}: {text}): "
            "check the model name, its context size and the request options",
        )

    def stream_error(self, detail: object) -> ModelError:
        return ModelError(
            "server_error", f"{self.label} reported an error mid-reply: {self.detail(detail)}: check the server's log"
        )

    def redirected(self, target: str) -> ModelError:
        return ModelError(
            "bad_request",
            f"{self.label} answered with a redirect to {target}, another server: not followed (the prompt "
            f"goes only to the server you chose); if {target} is the one you mean, {self.host_hint}",
        )

    def too_large(self, limit: int) -> ModelError:
        return ModelError(
            "too_large",
            f"the reply from {self.label} passed {limit / 2**20:g} MiB and was dropped: a runaway server "
            "(lower --max-tokens, or check the server)",
        )

    def malformed(self, detail: object) -> ModelError:
        return ModelError(
            "protocol",
            f"{self.label} sent a malformed stream ({self.detail(detail)}): check that the URL points at the "
            "right kind of server",
        )

    def cut_off(self, why: str) -> ModelError:
        return ModelError(
            "cut_off",
            f"the reply from {self.label} stopped before it was done ({why}): check the server's log if it persists",
        )

    def empty(self, model: str, cut_at_max_tokens: int | None = None) -> ModelError:
        if cut_at_max_tokens is not None:
            return ModelError(
                "empty",
                f"model '{model}' on {self.label} used all {cut_at_max_tokens} max_tokens without writing any "
                "text (reasoning, perhaps): raise --max-tokens",
            )
        return ModelError(
            "empty", f"model '{model}' on {self.label} sent an empty reply: try another model if it persists"
        )


def status_kind(status: int) -> ErrorKind:
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    return "bad_request"


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Retry-After (seconds or an HTTP date) or retry-after-ms, as seconds; None if absent or bad."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if (ms := lower.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def is_dns_failure(exc: BaseException) -> bool:
    """True if the host name did not resolve, anywhere in the exception's chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return True
        if any(phrase in str(current).lower() for phrase in _DNS_PHRASES):
            return True
        current = current.__cause__ or current.__context__
    return False


def display_url(url: str) -> str:
    """A URL fit for a message: no user:password@, query or fragment, no trailing slash."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: show the URL without it
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


async def with_server_models(
    error: ModelError, server: Server, model: str, list_models: Callable[[], Awaitable[list[str]]]
) -> ModelError:
    """An unknown-model error with the models the server does have (and the closest to the name
    asked for); any other error, or a server that cannot list its models, as it was."""
    if error.kind != "not_found":
        return error
    try:
        async with asyncio.timeout(MODEL_LISTING_TIMEOUT_S):
            names = [server.detail(n) for n in await list_models()]
    except Exception:
        return error
    if not names:
        return ModelError(error.kind, f"{error} (the server has no models)", error.retry_after_s)
    shown = ", ".join(names[:MODELS_LISTED]) + (
        f" and {len(names) - MODELS_LISTED} more" if len(names) > MODELS_LISTED else ""
    )
    close = difflib.get_close_matches(model, names, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    return ModelError(error.kind, f"{error} (the server has: {shown}{guess})", error.retry_after_s)
