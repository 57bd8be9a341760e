"""Shared fixtures. The loopback model servers live in tests/llm_servers.py (see its docstring);
import its helpers with `from llm_servers import Reply` (pytest puts tests/ on sys.path)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_servers import LoopbackLLMServer, closed_port_url

# Fault rows for docs/reliability.md: the `fault` marker and the `observed` fixture.
pytest_plugins = ["faultlog"]


@pytest.fixture
def llm_server() -> Iterator[LoopbackLLMServer]:
    """A loopback server speaking the Ollama and OpenAI chat protocols, stopped at teardown."""
    with LoopbackLLMServer() as server:
        yield server


@pytest.fixture
def refused_url() -> str:
    """A loopback URL on which nothing listens: connecting is refused."""
    return closed_port_url()
