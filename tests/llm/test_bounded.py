"""The pieces of engine/llm/bounded.py on their own, without a server: the redirect check (another
origin is refused, the same one passes), the proxy chosen for a URL, the zlib header test, the
inflater at the edges of a body (members, trailing bytes, reads that end mid-header, output that
fills a piece exactly), the Content-Encoding header read, the exception-chain helpers, and the
capped transport's count, driven through a stand-in for the HTTP library's own transport."""

from __future__ import annotations

import gzip
import zlib
from types import SimpleNamespace

import httpx
import pytest

from cuda_llm.engine.llm.bounded import (
    DECODE_STEP_BYTES,
    RedirectRefused,
    ResponseTooLarge,
    UndecodableResponse,
    _Inflater,
    _inflaters,
    _origin,
    _zlib_header,
    capped_transport,
    check_redirect,
    proxy_for,
    redirected,
    response_cap,
    too_large,
    undecodable,
)

# ---------------------------------------------------------------------------------------------------
# Redirects


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://gpu-box/api/chat", ("http", "gpu-box", 80)),
        ("http://gpu-box:80/api/chat", ("http", "gpu-box", 80)),
        ("https://API.Example.com/v1", ("https", "api.example.com", 443)),
        ("https://api.example.com:8443/v1", ("https", "api.example.com", 8443)),
        ("http://gpu-box:11434", ("http", "gpu-box", 11434)),
        ("ftp://files.example/x", ("ftp", "files.example", None)),
        ("/v1/chat", ("", "", None)),
    ],
)
def test_an_origin_is_scheme_host_and_port_with_the_default_port_filled_in(url: str, origin: tuple) -> None:
    assert _origin(url) == origin


def test_urls_that_differ_only_in_spelling_have_one_origin() -> None:
    assert _origin("http://gpu-box/a") == _origin("http://GPU-BOX:80/b?c#d")
    assert _origin("https://gpu-box/") == _origin("https://gpu-box:443/")
    assert _origin("http://gpu-box/") != _origin("http://gpu-box:8080/")
    assert _origin("http://gpu-box/") != _origin("https://gpu-box/")
    assert _origin("http://gpu-box:443/") != _origin("https://gpu-box/")


REQUEST = "http://gpu-box:11434/api/chat?stream=1#top"


@pytest.mark.parametrize(
    ("status", "location", "target"),
    [
        (302, "http://elsewhere.example:11434/api/chat", "http://elsewhere.example:11434"),
        (301, "https://gpu-box:11434/api/chat", "https://gpu-box:11434"),  # another scheme
        (307, "http://gpu-box:8080/api/chat", "http://gpu-box:8080"),  # another port
        (308, "http://gpu-box/api/chat", "http://gpu-box"),  # the default port is another port
        (303, "//elsewhere.example/api/chat", "http://elsewhere.example"),  # scheme-relative
        (300, "https://evil.example:8443/steal?key=1#frag", "https://evil.example:8443"),
        (399, "http://evil.example/", "http://evil.example"),
    ],
)
def test_a_redirect_to_another_origin_is_refused_and_names_both_servers(
    status: int, location: str, target: str
) -> None:
    with pytest.raises(RedirectRefused) as caught:
        check_redirect(REQUEST, status, location)

    assert caught.value.source == "http://gpu-box:11434", "the request's origin, without path, query or fragment"
    assert caught.value.target == target, "the target's origin, without path, query or fragment"
    assert str(caught.value) == f"a redirect from http://gpu-box:11434 to {target}"


@pytest.mark.parametrize(
    ("request_url", "location"),
    [
        (REQUEST, "/api/chat/"),  # a slash added
        (REQUEST, "chat2"),  # relative to the path
        (REQUEST, "?stream=0"),
        (REQUEST, "http://GPU-BOX:11434/api/chat/"),  # the host in capitals
        ("http://gpu-box/v1/models", "http://gpu-box:80/v1/models/"),  # the default port spelt out
        ("http://gpu-box:80/v1/models", "http://gpu-box/v1/models/"),
        ("https://api.example.com/v1/models", "https://api.example.com:443/v1/models/"),
    ],
)
def test_a_redirect_within_the_same_origin_is_not_refused(request_url: str, location: str) -> None:
    for status in (300, 301, 302, 307, 308, 399):
        check_redirect(request_url, status, location)


@pytest.mark.parametrize("status", [200, 201, 299, 400, 401, 404, 500])
def test_a_reply_that_is_not_a_redirect_is_not_refused_whatever_its_location(status: int) -> None:
    check_redirect(REQUEST, status, "https://evil.example/")


@pytest.mark.parametrize("location", [None, ""])
def test_a_redirect_without_a_location_is_not_refused(location: str | None) -> None:
    check_redirect(REQUEST, 302, location)


@pytest.mark.parametrize(
    "location",
    ["http://elsewhere.example:99999/api/chat", "http://gpu-box:abc/", "http://[::1/api/chat", "http://[zz]:1/"],
)
def test_a_location_that_does_not_parse_is_refused_and_quoted(location: str) -> None:
    with pytest.raises(RedirectRefused) as caught:
        check_redirect(REQUEST, 302, location)

    assert caught.value.source == "http://gpu-box:11434"
    assert caught.value.target == repr(location), "quoted as the server sent it"


def test_a_malformed_location_is_quoted_only_in_part() -> None:
    location = "http://h:99999/" + "x" * 500
    with pytest.raises(RedirectRefused) as caught:
        check_redirect(REQUEST, 302, location)
    assert caught.value.target == repr(location[:80])


def test_the_refusal_never_repeats_a_user_and_password() -> None:
    with pytest.raises(RedirectRefused) as caught:
        check_redirect("http://me:s3cret@gpu-box:11434/api/chat", 302, "http://you:pw@elsewhere.example/x")
    assert (caught.value.source, caught.value.target) == ("http://gpu-box:11434", "http://elsewhere.example")
    assert "s3cret" not in str(caught.value) and "pw" not in str(caught.value)


def test_the_refusal_keeps_what_it_was_given() -> None:
    refused = RedirectRefused("http://a:1", "https://b:2")
    assert (refused.source, refused.target) == ("http://a:1", "https://b:2")
    assert str(refused) == "a redirect from http://a:1 to https://b:2"


def test_a_response_too_large_names_its_limit() -> None:
    refused = ResponseTooLarge(1 << 20)
    assert refused.limit == 1 << 20
    assert str(refused) == "the response passed 1,048,576 bytes"


# ---------------------------------------------------------------------------------------------------
# The exception chain: the client libraries wrap what the transport raises


def wrapped_by_cause(inner: BaseException) -> RuntimeError:
    """`inner` as the explicit cause of a library's exception, with no implicit context."""
    outer = RuntimeError("the library's error")
    outer.__cause__ = inner
    assert outer.__context__ is None
    return outer


def wrapped_by_context(inner: BaseException) -> RuntimeError:
    """`inner` as the implicit context of a library's exception (raised while handling it)."""
    try:
        try:
            raise inner
        except type(inner):
            raise RuntimeError("the library's error")  # noqa: B904  # the implicit chain is the point
    except RuntimeError as outer:
        assert outer.__cause__ is None and outer.__context__ is inner
        return outer


HELPERS = [
    (too_large, ResponseTooLarge(100)),
    (undecodable, UndecodableResponse("a body in Content-Encoding 'br'")),
    (redirected, RedirectRefused("http://a", "http://b")),
]


@pytest.mark.parametrize(("helper", "inner"), HELPERS, ids=["too_large", "undecodable", "redirected"])
def test_each_helper_finds_its_exception_itself_or_under_any_wrapping(helper, inner: BaseException) -> None:
    assert helper(inner) is inner
    assert helper(wrapped_by_cause(inner)) is inner
    assert helper(wrapped_by_context(inner)) is inner
    assert helper(wrapped_by_cause(ValueError("unrelated"))) is None
    two_deep = wrapped_by_cause(wrapped_by_context(inner))
    assert helper(two_deep) is inner


@pytest.mark.parametrize(("helper", "inner"), HELPERS, ids=["too_large", "undecodable", "redirected"])
def test_each_helper_finds_only_its_own_exception(helper, inner: BaseException) -> None:
    others = [other for _, other in HELPERS if other is not inner]
    for other in others:
        assert helper(wrapped_by_cause(other)) is None
    assert helper(RuntimeError("plain")) is None


def test_the_cause_is_followed_before_the_context() -> None:
    outer = RuntimeError("the library's error")
    outer.__cause__ = ValueError("the cause")
    outer.__context__ = ResponseTooLarge(5)
    assert too_large(outer) is None, "an explicit cause stands for the chain, as Python prints it"
    outer.__cause__.__cause__ = ResponseTooLarge(7)
    assert too_large(outer) is outer.__cause__.__cause__


@pytest.mark.timeout(10)
def test_a_chain_that_loops_back_on_itself_ends_the_search() -> None:
    first, second = RuntimeError("first"), ValueError("second")
    first.__cause__, second.__cause__ = second, first
    assert too_large(first) is None
    assert undecodable(second) is None
    third = OSError("third")
    third.__context__ = third
    assert redirected(third) is None


# ---------------------------------------------------------------------------------------------------
# Proxies

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy from the machine's own environment (either spelling)."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_no_proxy_lists_hosts_and_their_subdomains_without_a_port(no_proxies: pytest.MonkeyPatch) -> None:
    no_proxies.setenv("HTTP_PROXY", "proxy.corp:3128")
    no_proxies.setenv("NO_PROXY", "example.com")

    assert proxy_for("http://example.com/v1") is None
    assert proxy_for("http://example.com:8000/v1") is None
    assert proxy_for("http://api.example.com/v1") is None
    assert proxy_for("http://notexample.com/v1") == "http://proxy.corp:3128"
    assert proxy_for("http://gpu-box/v1") == "http://proxy.corp:3128"


def test_no_proxy_with_a_port_bypasses_that_port_only(no_proxies: pytest.MonkeyPatch) -> None:
    no_proxies.setenv("HTTP_PROXY", "http://proxy.corp:3128")
    no_proxies.setenv("NO_PROXY", "gpu-box:8080")

    assert proxy_for("http://gpu-box:8080/v1") is None
    assert proxy_for("http://gpu-box:9000/v1") == "http://proxy.corp:3128"
    assert proxy_for("http://gpu-box/v1") == "http://proxy.corp:3128"


def test_the_proxy_for_a_scheme_wins_over_all_proxy(no_proxies: pytest.MonkeyPatch) -> None:
    no_proxies.setenv("ALL_PROXY", "socks5://socks.corp:1080")
    assert proxy_for("https://api.example.com/v1") == "socks5://socks.corp:1080"
    no_proxies.setenv("HTTPS_PROXY", "https.corp:3128")
    assert proxy_for("https://api.example.com/v1") == "http://https.corp:3128"
    assert proxy_for("http://api.example.com/v1") == "socks5://socks.corp:1080"
    assert proxy_for("http:///no-host") is None


# ---------------------------------------------------------------------------------------------------
# The zlib header and the inflater


@pytest.mark.parametrize("header", [b"\x78\x9c", b"\x78\x01", b"\x78\xda", b"\x08\x1d", b"\x78\x9cmore"])
def test_a_zlib_header_is_recognised_from_its_two_bytes(header: bytes) -> None:
    assert _zlib_header(header)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x78",  # one byte: no header yet
        b"\x78\x00",  # deflate, but the check on the two bytes fails
        b"\x00\x00",  # the check holds (0 is a multiple of 31), but the method is not deflate
        b"\x1f\x8b",  # gzip's magic
        b"\x03\x00",  # a raw deflate stream of nothing
    ],
)
def test_bytes_that_are_not_a_zlib_header_are_not_taken_for_one(data: bytes) -> None:
    assert not _zlib_header(data)


def deflated(text: bytes, raw: bool) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return packer.compress(text) + packer.flush()


def inflated(coding: str, *reads: bytes) -> bytes:
    inflater = _Inflater(coding)
    pieces = [piece for read in reads for piece in inflater.feed(read)]
    assert all(len(piece) <= DECODE_STEP_BYTES for piece in pieces)
    return b"".join(pieces)


@pytest.mark.parametrize("raw", [False, True], ids=["zlib", "raw"])
def test_a_deflate_body_whose_first_read_ends_after_two_bytes(raw: bool) -> None:
    text = b"deflated kernels " * 500
    body = deflated(text, raw)
    assert inflated("deflate", body[:2], body[2:]) == text
    assert inflated("deflate", body[:1], body[1:2], body[2:]) == text


@pytest.mark.parametrize(
    "size",
    [
        1,
        DECODE_STEP_BYTES - 1,
        DECODE_STEP_BYTES,
        DECODE_STEP_BYTES + 1,
        DECODE_STEP_BYTES + 100,
        3 * DECODE_STEP_BYTES + 7,
    ],
)
@pytest.mark.parametrize("coding", ["gzip", "deflate-zlib", "deflate-raw"])
def test_a_body_around_a_piece_boundary_arrives_whole(coding: str, size: int) -> None:
    """Raw deflate of a piece and a little more is all taken in while its last bytes are still to
    come out: the inflater must ask zlib again rather than take the end of the input for the end."""
    text = b"x" * size
    body = gzip.compress(text) if coding == "gzip" else deflated(text, raw=coding == "deflate-raw")
    name = coding.split("-")[0]
    assert inflated(name, body) == text
    assert inflated(name, body[: len(body) // 2], body[len(body) // 2 :]) == text


def test_a_deflate_body_ends_at_its_stream_and_ignores_what_follows() -> None:
    text = b"the one stream " * 200
    for raw in (False, True):
        body = deflated(text, raw)
        assert inflated("deflate", body + gzip.compress(b"not this")) == text
        assert inflated("deflate", body + deflated(b"nor this", raw)) == text
        assert inflated("deflate", body, gzip.compress(b"nor this")) == text


def test_gzip_members_are_all_inflated_however_the_reads_split_them() -> None:
    first, second = gzip.compress(b"first member " * 300), gzip.compress(b"second member " * 300)
    text = b"first member " * 300 + b"second member " * 300
    body = first + second
    for cut in (len(first) - 1, len(first), len(first) + 1, len(first) + 2):
        assert inflated("gzip", body[:cut], body[cut:]) == text
    assert inflated("x-gzip", body) == text


def test_bytes_after_the_last_gzip_member_end_the_body_for_good() -> None:
    """Padding after the end is ignored, and so is everything after it, even what looks like
    another member."""
    text = b"the only member " * 300
    body = gzip.compress(text) + b"\0\0"
    assert inflated("gzip", body) == text
    assert inflated("gzip", body, gzip.compress(b"after the end")) == text
    assert inflated("gzip", body + gzip.compress(b"after the end")) == text
    assert inflated("gzip", gzip.compress(text) + b"\0", b"\0", gzip.compress(b"after the end")) == text


@pytest.mark.parametrize("body", [b"no", b"not gzip at all", b"\x1f\x8c"])
def test_a_gzip_body_without_the_gzip_magic_is_refused_at_once(body: bytes) -> None:
    with pytest.raises(UndecodableResponse, match="a gzip body that does not inflate"):
        inflated("gzip", body)


def test_a_deflate_body_that_does_not_inflate_is_refused() -> None:
    with pytest.raises(UndecodableResponse, match="a deflate body that does not inflate"):
        inflated("deflate", b"\x78\x9c" + b"\xff" * 20)


# ---------------------------------------------------------------------------------------------------
# The Content-Encoding header


@pytest.mark.parametrize(
    ("headers", "codings"),
    [
        ({}, []),
        ({"Content-Encoding": "identity"}, []),
        ({"Content-Encoding": "IDENTITY"}, []),
        ({"Content-Encoding": ""}, []),
        ({"Content-Encoding": "gzip"}, ["gzip"]),
        ({"Content-Encoding": " GZIP "}, ["gzip"]),
        ({"Content-Encoding": "gzip, identity"}, ["gzip"]),
        ({"Content-Encoding": "identity,x-gzip"}, ["x-gzip"]),
        ({"Content-Encoding": "deflate, gzip"}, ["gzip", "deflate"]),  # the last applied is undone first
        ([("Content-Encoding", "deflate"), ("content-encoding", "gzip")], ["gzip", "deflate"]),
    ],
)
def test_the_codings_are_read_from_every_content_encoding_in_the_order_they_undo(headers, codings) -> None:
    assert [i.coding for i in _inflaters(httpx.Headers(headers))] == codings


@pytest.mark.parametrize("value", ["br", "gzip, br", "zstd, identity", "compress"])
def test_a_coding_not_inflated_here_is_refused_by_name(value: str) -> None:
    unknown = next(c.strip() for c in value.split(",") if c.strip() not in ("gzip", "identity"))
    with pytest.raises(UndecodableResponse) as caught:
        _inflaters(httpx.Headers({"Content-Encoding": value}))
    assert str(caught.value) == f"a body in Content-Encoding {unknown!r}, which was not asked for"


# ---------------------------------------------------------------------------------------------------
# The capped transport, through a stand-in for the library's own transport

URL = "http://gpu-box:11434/api/tags"


class Body(httpx.AsyncByteStream):
    """A reply's body as the library's transport hands it on, in the given reads."""

    def __init__(self, *reads: bytes) -> None:
        self.reads = reads
        self.closed = False

    async def __aiter__(self):
        for read in self.reads:
            yield read

    async def aclose(self) -> None:
        self.closed = True


class Server:
    """Stands in for the HTTP library's own transport (`lib.AsyncHTTPTransport`): answers each
    request with the next scripted reply, and keeps the requests as they were sent."""

    def __init__(self, *replies: httpx.Response) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def library(self) -> SimpleNamespace:
        server = self

        class Transport(httpx.AsyncBaseTransport):
            def __init__(self, proxy: str | None = None) -> None:
                self.proxy = proxy

            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                server.requests.append(request)
                return server.replies.pop(0)

        return SimpleNamespace(
            AsyncByteStream=httpx.AsyncByteStream,
            AsyncBaseTransport=httpx.AsyncBaseTransport,
            AsyncHTTPTransport=Transport,
        )


def reply(*reads: bytes, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()}, stream=Body(*reads))


async def get(server: Server, cap: int, url: str = URL, **headers: str) -> httpx.Response:
    """GET `url` through the capped transport with a response cap of `cap`, the body read whole."""
    token = response_cap.set(cap)
    try:
        async with httpx.AsyncClient(transport=capped_transport(server.library()), trust_env=False) as client:
            return await client.get(url, headers=headers)
    finally:
        response_cap.reset(token)


async def test_a_body_of_exactly_the_cap_arrives_and_one_byte_more_does_not() -> None:
    exact = await get(Server(reply(b"a" * 400, b"b" * 600)), cap=1000)
    assert exact.content == b"a" * 400 + b"b" * 600

    with pytest.raises(ResponseTooLarge) as caught:
        await get(Server(reply(b"a" * 400, b"b" * 601)), cap=1000)
    assert caught.value.limit == 1000


async def test_every_byte_received_counts_even_bytes_that_inflate_to_nothing() -> None:
    """A small gzip body padded with 2,000 bytes after its end: 100 bytes a read, each read under
    the cap and the text under it too, but the body as received is over it."""
    body = gzip.compress(b"ok") + b"\0" * 2000
    reads = [body[i : i + 100] for i in range(0, len(body), 100)]

    with pytest.raises(ResponseTooLarge) as caught:
        await get(Server(reply(*reads, Content_Encoding="gzip")), cap=1000)
    assert caught.value.limit == 1000

    roomy = await get(Server(reply(*reads, Content_Encoding="gzip")), cap=len(body))
    assert roomy.content == b"ok"


async def test_the_inflated_text_is_counted_against_the_cap_exactly() -> None:
    text = b"x" * 5000
    body = gzip.compress(text)
    assert len(body) < 1000

    exact = await get(Server(reply(body, Content_Encoding="gzip")), cap=len(text))
    assert exact.content == text
    with pytest.raises(ResponseTooLarge):
        await get(Server(reply(body, Content_Encoding="gzip")), cap=len(text) - 1)


async def test_a_compressed_reply_is_handed_on_plain_without_its_encoding_or_length() -> None:
    text = b'{"models": []}' * 100
    body = gzip.compress(text)
    server = Server(reply(body[:10], body[10:], Content_Encoding="gzip", Content_Length=str(len(body))))

    response = await get(server, cap=1 << 20)

    assert response.content == text
    assert "content-encoding" not in response.headers
    assert "content-length" not in response.headers, "the compressed length is not the length handed on"


async def test_a_plain_reply_keeps_its_headers() -> None:
    response = await get(Server(reply(b"plain", Content_Length="5", Content_Encoding="identity")), cap=100)
    assert response.content == b"plain"
    assert response.headers["content-length"] == "5"


async def test_every_request_asks_for_the_body_as_it_is() -> None:
    server = Server(reply(b"{}"))
    await get(server, cap=100, **{"Accept-Encoding": "gzip, br"})
    assert server.requests[0].headers["accept-encoding"] == "identity"


async def test_a_redirect_to_another_origin_is_refused_and_its_reply_closed() -> None:
    moved = reply(b"moved", status=302, Location="https://elsewhere.example/api/tags")
    with pytest.raises(RedirectRefused) as caught:
        await get(Server(moved), cap=100)
    assert (caught.value.source, caught.value.target) == ("http://gpu-box:11434", "https://elsewhere.example")
    assert moved.stream.closed


async def test_a_redirect_within_the_server_is_handed_on() -> None:
    moved = reply(b"", status=307, Location="/api/tags/")
    response = await get(Server(moved), cap=100)
    assert response.status_code == 307
    assert response.headers["location"] == "/api/tags/"


async def test_a_reply_in_a_coding_not_inflated_here_is_refused_and_closed() -> None:
    brotli = reply(b"\x8b\x02\x80", Content_Encoding="br")
    with pytest.raises(UndecodableResponse, match="'br'"):
        await get(Server(brotli), cap=100)
    assert brotli.stream.closed
