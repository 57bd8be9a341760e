"""What the provider tests share: one protocol of the loopback server (`Wire`), the prompt, and
limits small enough that a test that goes wrong fails in seconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_servers import LoopbackLLMServer

from cuda_llm.engine.core.settings import GenerateOptions, RetryPolicy
from cuda_llm.engine.llm.base import Message, ModelProvider, RequestKey
from cuda_llm.engine.llm.ollama_provider import OllamaProvider
from cuda_llm.engine.llm.openai_provider import OpenAIProvider

MODEL = "loop-model"
KEY = RequestKey(round=1, attempt=0, slot=0)
PROMPT = [Message("system", "You write CUDA kernels."), Message("user", "Write a vector add kernel please")]
# Small limits so a test that goes wrong fails in seconds; the loopback server answers in
# milliseconds, so no correct test comes near them.
FAST = GenerateOptions(first_token_timeout_s=3.0, timeout_s=5.0)
# Retries in milliseconds, with a cap small enough that a Retry-After cannot slow the suite.
FAST_RETRY = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.5)


@dataclass
class Wire:
    """One protocol on the loopback server: makes providers for it and closes them at teardown."""

    name: str  # "ollama" or "openai"
    server: LoopbackLLMServer
    providers: list[ModelProvider] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The URL the provider's messages must name."""
        return self.server.url if self.name == "ollama" else self.server.openai_url

    def provider(self, model: str = MODEL, url: str | None = None) -> ModelProvider:
        target = url if url is not None else self.url
        made: ModelProvider = (
            OllamaProvider(model, host=target) if self.name == "ollama" else OpenAIProvider(model, base_url=target)
        )
        self.providers.append(made)
        return made

    async def close(self) -> None:
        for p in self.providers:
            await p.close()
