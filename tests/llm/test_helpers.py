"""The small pure parts: server URLs, Retry-After, backoff, DNS detection, message hygiene."""

from __future__ import annotations

import random
import socket

import pytest

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import RetryPolicy
from cuda_llm.engine.llm.base import ModelError
from cuda_llm.engine.llm.http_errors import DETAIL_CHARS, Server, display_url, is_dns_failure, retry_after_seconds
from cuda_llm.engine.llm.ollama_provider import ollama_url
from cuda_llm.engine.llm.retry import backoff_delay


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:9000", "http://gpu-box:9000"),
        ("http://gpu-box", "http://gpu-box:80"),
        ("https://gpu-box", "https://gpu-box:443"),
        ("https://gpu-box:8443/ollama/", "https://gpu-box:8443/ollama"),
        ("[::1]:5000", "http://[::1]:5000"),
        (":5000", "http://127.0.0.1:5000"),
    ],
)
def test_ollama_url_reads_hosts_like_the_ollama_cli(host: str, url: str) -> None:
    assert ollama_url(host) == url


def test_ollama_url_falls_back_to_the_environment_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "envbox:1234")
    assert ollama_url(None) == "http://envbox:1234"
    assert ollama_url("argbox") == "http://argbox:11434"  # the argument wins
    monkeypatch.delenv("OLLAMA_HOST")
    assert ollama_url(None) == "http://127.0.0.1:11434"


@pytest.mark.parametrize("host", ["gpu-box:port", "ftp://gpu-box", "gpu-box:70000", "::::", "[::1"])
def test_a_bad_ollama_host_is_a_user_error(host: str) -> None:
    with pytest.raises(UserError, match=r"--host '.*' is not .*server address"):
        ollama_url(host)


def test_display_url_drops_credentials_and_query() -> None:
    assert display_url("https://user:secret@api.example.com/v1/?key=abc#x") == "https://api.example.com/v1"


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
        ({"retry-after": "Thu, 01 Jan 1970 00:01:40 GMT"}, 40.0),  # 100 s after the epoch; "now" is 60
    ],
)
def test_retry_after_seconds(headers: dict[str, str] | None, seconds: float | None) -> None:
    assert retry_after_seconds(headers, now=60.0) == seconds


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(attempts=10, base_delay_s=1.0, max_delay_s=5.0)
    error = ModelError("server_error", "x")
    rng = random.Random(1)
    delays = [[backoff_delay(policy, retry, error, rng) for _ in range(200)] for retry in (1, 2, 3, 4)]

    for retry, samples in zip((1, 2, 3), delays, strict=False):
        step = 2 ** (retry - 1)
        assert step / 2 <= min(samples) and max(samples) <= step
        assert max(samples) - min(samples) > step / 4  # jittered, not constant
    assert max(delays[3]) <= 5.0  # 8 s capped at 5


def test_backoff_uses_retry_after_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0)
    rng = random.Random(0)
    assert backoff_delay(policy, 1, ModelError("rate_limited", "x", retry_after_s=4.0), rng) == 4.0
    assert backoff_delay(policy, 1, ModelError("rate_limited", "x", retry_after_s=4000.0), rng) == 30.0


def test_dns_failure_is_found_anywhere_in_the_chain() -> None:
    try:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except OSError as inner:
            raise RuntimeError("All connection attempts failed") from inner
    except RuntimeError as outer:
        assert is_dns_failure(outer)
    assert not is_dns_failure(ConnectionRefusedError(111, "Connection refused"))


def test_server_details_are_one_short_line_without_the_secret() -> None:
    server = Server("the server at http://x", "r", "h", "k", lambda m: m, secret="sk-123")
    detail = server.detail("line one\nline two with sk-123 " + "y" * 500)
    assert "\n" not in detail
    assert "sk-123" not in detail and "[redacted]" in detail
    assert len(detail) == DETAIL_CHARS
    assert "sk-123" not in repr(server)
