"""The `wire` fixture: each provider test that takes it runs once per protocol (ollama, openai)
against the loopback server, through the real client library."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from llm_servers import LoopbackLLMServer

from .wire import Wire


@pytest.fixture(params=["ollama", "openai"])
async def wire(request: pytest.FixtureRequest, llm_server: LoopbackLLMServer) -> AsyncIterator[Wire]:
    w = Wire(request.param, llm_server)
    yield w
    await w.close()
