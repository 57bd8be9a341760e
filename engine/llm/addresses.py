"""Model server addresses (`--host`, `--base-url` and the environment variables behind them), read
and checked without importing a client library.

The ollama library builds a client from OLLAMA_HOST when it is imported, and raises a bare
ValueError there for a port that is not a number or out of range: whatever the command and
whatever --host says. So the variables are checked here, before any library is imported
(`check_environment`, called by the launcher first thing), and every address a user gives is
read by the same rules, each fault one line that names where the address came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit

from cuda_llm.engine.core.errors import UserError

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
OLLAMA_PORT = 11434
OLLAMA_ENV = "OLLAMA_HOST"
OPENAI_ENV = "OPENAI_BASE_URL"


def _port(parts: SplitResult, raw: str, where: str, default: int) -> int:
    try:
        port = parts.port
    except ValueError:
        raise UserError(f"{where} {raw!r} is not a server address: its port must be a number from 1 to 65535") from None
    return port or default


def ollama_address(raw: str, where: str) -> str:
    """An ollama server address as the ollama client and CLI read OLLAMA_HOST: "gpu-box" means
    http://gpu-box:11434, "http://gpu-box" port 80, "https://gpu-box" port 443. `where` names its
    source in the error ("--host", "OLLAMA_HOST")."""
    scheme, sep, rest = raw.partition("://")
    default_port = OLLAMA_PORT
    if not sep:
        scheme, rest = "http", raw
    elif scheme == "http":
        default_port = 80
    elif scheme == "https":
        default_port = 443
    else:
        raise UserError(f"{where} {raw!r} is not an ollama server address: use HOST[:PORT] or http(s)://HOST[:PORT]")
    try:
        parts = urlsplit(f"{scheme}://{rest}")
    except ValueError:  # an unclosed '[' of an IPv6 address
        raise UserError(f"{where} {raw!r} is not a server address: use HOST[:PORT] or http(s)://HOST[:PORT]") from None
    port = _port(parts, raw, where, default_port)
    name = parts.hostname or "127.0.0.1"
    if ":" in name:
        name = f"[{name}]"  # IPv6
    path = parts.path.strip("/")
    return f"{scheme}://{name}:{port}" + (f"/{path}" if path else "")


def ollama_url(host: str | None) -> str:
    """The ollama server: `host` (--host), else OLLAMA_HOST, else the local default."""
    if host and host.strip():
        return ollama_address(host.strip(), "--host")
    raw = os.environ.get(OLLAMA_ENV, "").strip()
    return ollama_address(raw, OLLAMA_ENV) if raw else DEFAULT_OLLAMA_URL


def check_base_url(raw: str, where: str) -> str:
    """An OpenAI-compatible server's base URL (http(s)://HOST[:PORT][/PATH]), unchanged, or UserError."""
    text = raw.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"{where} {raw!r} is not a server URL: use http(s)://HOST[:PORT]/v1")
    _port(parts, raw, where, 0)
    return text


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Every server address the environment gives, checked before any work (and before a library
    that reads one is imported): UserError naming the variable and what to do."""
    env = os.environ if environ is None else environ
    checks = (
        # The ollama library reads OLLAMA_HOST when it is imported, whatever --host says.
        (OLLAMA_ENV, ollama_address, "fix or unset it (the ollama library reads it even when --host is given)"),
        (OPENAI_ENV, check_base_url, "fix or unset it"),
    )
    for name, check, advice in checks:
        value = env.get(name, "").strip()
        if not value:
            continue
        try:
            check(value, name)
        except UserError as exc:
            raise UserError(f"{exc}; {advice}") from None
