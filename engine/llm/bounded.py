"""Every byte a model server sends is counted before it is held, after it is decoded.

The client libraries read a streamed line whole before handing it over (httpx's line iterator), so
a server that sends one 300 MB line makes the process hold 300 MB before any check of ours sees a
character. The transport every provider's HTTP client uses counts the bytes of each response body
as they arrive and ends the request once they pass the cap: a runaway or hostile server costs at
most that much memory, and its reply is refused with one line.

A compressed body would slip past a count of the bytes on the wire: httpx inflates each chunk it
reads whole, after the transport, and 300 MiB of one repeated character gzip to 300 KB. So the
transport asks for no compression (Accept-Encoding: identity), and a body that comes compressed
anyway is inflated here, DECODE_STEP_BYTES at a time, each piece counted before the next is made;
httpx is then handed plain bytes (the Content-Encoding header removed), and a coding this module
does not inflate is refused rather than passed on for httpx to inflate unbounded. Error bodies
(read by an event hook or by the client library) come through the same stream.

A client given a transport of its own ignores the proxies the environment names (httpx reads them
only for its default transport), so this transport routes each request through the proxy the
environment names for it (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY: `proxy_for`), and a proxied
reply passes the same count. The clients are built with trust_env=False to say so.

A redirect to another origin (scheme, host or port) is refused here, below both clients (each follows
redirects on its own): following it would send the prompt to a server nobody chose, and silently.
"""

from __future__ import annotations

import contextvars
import urllib.parse
import urllib.request
import zlib
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from cuda_llm.engine.core.settings import GenerateOptions

# The cap of the request being made: set by a provider around each completion (its GenerateOptions),
# read by the transport; listing models and other small requests get the default.
response_cap: contextvars.ContextVar[int] = contextvars.ContextVar(
    "cuda_llm_response_cap", default=GenerateOptions().max_response_bytes
)
# A compressed body is inflated at most this many bytes at a time: deflate reaches about 1000:1, so
# one 64 KiB read could otherwise become 64 MiB before the count sees it. Small next to any cap,
# large enough that a megabyte-sized reply takes a few dozen steps.
DECODE_STEP_BYTES = 64 * 1024
# The content codings inflated here (zlib's wbits for each); "deflate" without the zlib header that
# RFC 9110 asks for (raw deflate, as some servers send) is read as raw (wbits -MAX_WBITS).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_GZIP_MAGIC = b"\x1f\x8b"
# Every request asks for the body as it is: set by each client too, so that a request the transport
# does not see (a proxy's) asks the same.
IDENTITY = {"Accept-Encoding": "identity"}


class ResponseTooLarge(Exception):
    """A response body passed the cap; the request was ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the response passed {limit:,} bytes")


class RedirectRefused(Exception):
    """A server answered with a redirect to another origin (scheme, host or port): not followed, since
    the next request would carry the prompt (and whatever the client sends) to a server nobody chose."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"a redirect from {source} to {target}")
        self.source = source
        self.target = target


def redirected(exc: BaseException) -> RedirectRefused | None:
    return _in_chain(exc, RedirectRefused)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _server(url: str) -> str:
    """scheme://host[:port] of a URL, without its path or any user:password@ (the message may be shown
    or logged)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, "", "", ""))


# How much of a Location that does not parse the refusal quotes (verbatim, in quotes).
_MALFORMED_LOCATION_CHARS = 80


def check_redirect(request_url: str, status: int, location: str | None) -> None:
    """Raise RedirectRefused for a redirect whose target is another origin than the request's; a
    redirect within the same server (a path with a slash added) may be followed. A Location that does
    not parse (a port out of range, a broken IPv6 host) is refused too: it names no server we chose."""
    if not 300 <= status < 400 or not location:
        return
    try:
        target = urllib.parse.urljoin(request_url, location)
        same = _origin(target) == _origin(request_url)
        there = _server(target)
    except ValueError:
        raise RedirectRefused(_server(request_url), repr(location[:_MALFORMED_LOCATION_CHARS])) from None
    if not same:
        raise RedirectRefused(_server(request_url), there)


class UndecodableResponse(Exception):
    """A response body in a coding that is not inflated here, or that does not inflate."""


def too_large(exc: BaseException) -> ResponseTooLarge | None:
    """The ResponseTooLarge behind an exception a client library raised (they wrap transport errors)."""
    return _in_chain(exc, ResponseTooLarge)


def undecodable(exc: BaseException) -> UndecodableResponse | None:
    """The UndecodableResponse behind an exception a client library raised."""
    return _in_chain(exc, UndecodableResponse)


def _in_chain(exc: BaseException, cls: type[Any]) -> Any:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, cls):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class _Inflater:
    """One zlib content coding (gzip, deflate), inflated in pieces of at most DECODE_STEP_BYTES."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib: Any = None  # None before the first member of the body and between gzip members
        self._members = 0
        self._opening = b""  # the first byte of a member, when a read ended after it
        self._ended = False  # the body ended; what follows is ignored (as httpx does)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while not self._ended:
            if self._zlib is None:
                # A member is told by its first two bytes (the gzip magic, the zlib header).
                data, self._opening = self._opening + data, b""
                if len(data) < 2:
                    self._opening = data
                    return
                if self._members and (self.coding == "deflate" or not data.startswith(_GZIP_MAGIC)):
                    self._ended = True  # not another gzip member (RFC 1952 allows several)
                    return
                wbits = _WBITS[self.coding]
                if self.coding == "deflate" and not _zlib_header(data):
                    wbits = -zlib.MAX_WBITS
                self._zlib = zlib.decompressobj(wbits)
                self._members += 1
            try:
                piece = self._zlib.decompress(data, DECODE_STEP_BYTES)
            except zlib.error as exc:
                raise UndecodableResponse(f"a {self.coding} body that does not inflate ({exc})") from None
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece
            if self._zlib.eof:
                data = self._zlib.unused_data
                self._zlib = None
            elif not data and len(piece) < DECODE_STEP_BYTES:
                return  # every byte taken and no output pending (a full piece may leave some: ask again)


def _zlib_header(data: bytes) -> bool:
    """Whether `data` opens with a zlib header (RFC 1950: deflate, and a check on the two bytes)."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _inflaters(headers: Any) -> list[_Inflater]:
    """The inflaters for a response's Content-Encoding, in the order they undo it (the last coding
    applied is undone first). Raises UndecodableResponse for a coding not inflated here."""
    codings = [c.strip().lower() for c in headers.get_list("content-encoding", split_commas=True)]
    codings = [c for c in codings if c and c != "identity"]
    for coding in codings:
        if coding not in _WBITS:
            raise UndecodableResponse(f"a body in Content-Encoding {coding!r}, which was not asked for")
    return [_Inflater(c) for c in reversed(codings)]


def capped_transport(lib: ModuleType | None = None) -> Any:
    """The HTTP library's own async transport, with every response body counted against
    `response_cap`. `lib` is the library the client uses: httpx (ollama) or httpx2 (openai 3),
    which share this interface but not their classes; None: httpx (imported now, not with this
    module, so that naming a backend loads no HTTP library)."""
    if lib is None:
        import httpx

        return _capped_transport(httpx)
    return _capped_transport(lib)


def _capped_transport(lib: ModuleType) -> Any:

    class CappedStream(lib.AsyncByteStream):  # type: ignore[name-defined]  # `lib` is a module given at run time
        """The body as received, inflated if it came compressed; the bytes received and the bytes
        handed on are each counted against the cap, every piece before the next is made."""

        def __init__(self, inner: Any, limit: int, inflaters: list[_Inflater]) -> None:
            self._inner = inner
            self._limit = limit
            self._inflaters = inflaters

        async def __aiter__(self) -> AsyncIterator[bytes]:
            received = decoded = 0
            async for chunk in self._inner:
                received += len(chunk)
                if received > self._limit:
                    raise ResponseTooLarge(self._limit)
                for piece in self._decode(chunk, 0):
                    decoded += len(piece)
                    if decoded > self._limit:
                        raise ResponseTooLarge(self._limit)
                    yield piece

        def _decode(self, data: bytes, level: int) -> Iterator[bytes]:
            if level == len(self._inflaters):
                yield data
                return
            for piece in self._inflaters[level].feed(data):
                yield from self._decode(piece, level + 1)

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(lib.AsyncBaseTransport):  # type: ignore[name-defined]  # `lib` is a module given at run time
        def __init__(self) -> None:
            self._direct = lib.AsyncHTTPTransport()
            self._proxied: dict[str, Any] = {}  # a transport for each proxy the environment names

        def _route(self, url: str) -> Any:
            proxy = proxy_for(url)
            if proxy is None:
                return self._direct
            if proxy not in self._proxied:
                self._proxied[proxy] = lib.AsyncHTTPTransport(proxy=proxy)
            return self._proxied[proxy]

        async def handle_async_request(self, request: Any) -> Any:
            request.headers.update(IDENTITY)
            response = await self._route(str(request.url)).handle_async_request(request)
            try:
                check_redirect(str(request.url), response.status_code, response.headers.get("Location"))
            except RedirectRefused:
                await response.aclose()
                raise
            try:
                inflaters = _inflaters(response.headers)
            except UndecodableResponse:
                await response.aclose()
                raise
            if inflaters:
                # httpx must not inflate it again (nor unbounded): it is handed the plain bytes.
                del response.headers["Content-Encoding"]
                if "Content-Length" in response.headers:
                    del response.headers["Content-Length"]
            response.stream = CappedStream(response.stream, response_cap.get(), inflaters)
            return response

        async def aclose(self) -> None:
            for transport in (self._direct, *self._proxied.values()):
                await transport.aclose()

    return CappedTransport()


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url` (<scheme>_PROXY, else ALL_PROXY; none for a host in
    NO_PROXY), as curl and httpx read them; None to connect directly."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return None
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy:
        return None
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    # Undocumented, so typeshed lacks it, but it is NO_PROXY's matching as urllib itself applies it.
    if urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]  # see above
        return None
    return proxy if "://" in proxy else f"http://{proxy}"
