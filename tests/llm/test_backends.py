"""A model backend is one class in one file plus its line in BACKENDS (docs/architecture.md): this file
adds one, registers it, and runs a whole session with it, the spec parsed and the server rules applied
by what the class declares."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import GenerateOptions
from cuda_llm.engine.fsr.session import SessionOptions, resume_server
from cuda_llm.engine.llm import spec as spec_module
from cuda_llm.engine.llm.base import Completion, Message, ModelProvider, RequestKey, TokenCallback
from cuda_llm.engine.llm.preflight import check_model
from cuda_llm.engine.llm.spec import ModelBackend, ModelSpec, ReplayLoader, parse_spec, server_of, spec_help
from cuda_llm.engine.store.sessions import SessionStore
from tests import scripted
from tests.session_driver import options, run_session


class EchoProvider(ModelBackend):
    """Answers every request with the same correct vector_add kernel; its server is named by --base-url."""

    kind = "echo"
    server_option = "base_url"
    default_server = "the echo default"

    def __init__(self, name: str, server: str | None) -> None:
        self.spec = f"echo:{name}"
        self.where = server or "http://echo.invalid"
        self.name = name

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        return cls(spec.name, server)

    async def complete(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        key: RequestKey,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        text = scripted.reply()
        if on_token:
            on_token(text)
        return Completion(text, self.name, len(messages), 100, 0.01, 0.0, "stop")

    async def list_models(self) -> list[str]:
        return [self.name]

    async def close(self) -> None:
        pass


@pytest.fixture
def echo(monkeypatch):
    monkeypatch.setitem(spec_module.BACKENDS, "echo", EchoProvider)
    return EchoProvider


def test_the_registered_backend_parses_and_says_what_it_can_do(echo):
    spec = parse_spec("Echo:tiny")
    assert spec == ModelSpec("echo", "tiny") and str(spec) == "echo:tiny"
    assert spec.backend is echo
    assert (spec.backend.server_flag(), spec.backend.origin()) == ("--base-url", "model")
    assert "echo:MODEL" in spec_help()
    with pytest.raises(UserError, match="unknown model spec 'echo:'"):
        parse_spec("echo:")


def test_unregistered_it_is_unknown():
    with pytest.raises(UserError, match="unknown model spec 'echo:tiny': use ollama:MODEL"):
        parse_spec("echo:tiny")


async def test_a_session_runs_with_it(echo, tmp_path):
    provider = spec_module.parse_model_spec("echo:tiny", host="http://ignored", base_url="http://echo.lan/v1")
    assert server_of(provider) == "http://echo.lan/v1"  # the base URL, the option it declared
    await check_model(provider)  # it lists its model: the preflight lets it through
    result, recorder = await run_session(
        options(tmp_path, "echo:tiny", candidates=1, rounds=1), base_url="http://echo.lan/v1"
    )
    assert result.status == "finished", result.reason
    assert set(recorder.final_statuses().values()) == {"compiled"}
    store = SessionStore(str(tmp_path / "sessions.db"))
    try:
        record = store.session(result.session_id)
    finally:
        store.close()
    assert (record.model, record.server) == ("echo:tiny", "http://echo.lan/v1")
    # A resume to another kind of server asks for --switch-server, in the words the class declared.
    with pytest.raises(UserError, match="ollama:m would send its prompts to OLLAMA_HOST or the local default"):
        resume_server(record, "ollama:m", SessionOptions(task="vector_add", model="ollama:m"))
    assert resume_server(record, "echo:tiny", SessionOptions(task="vector_add", model="echo:tiny")) == (
        None,
        "http://echo.lan/v1",
    )
