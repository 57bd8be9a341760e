"""The model spec (`--model ollama:MODEL`, `openai:MODEL`, `replay:SESSION`, `manual`) and the backends it
can name.

A spec's text is read here only: `parse_spec` turns it into a ModelSpec where it enters (the CLI's flag,
the TUI's field, a stored session's record), and everything else asks the spec's backend what it can do.
A backend is a provider class that declares its capabilities on itself (ModelBackend) and is listed in
BACKENDS by the path of its module, so a backend's heavy client library is imported only when a spec
names it. Adding a backend is its module plus one line in BACKENDS (docs/architecture.md shows one);
tests/test_layers.py fails if a second reader of the spec's text appears.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.llm.base import ModelProvider, RequestKey

ReplayLoader = Callable[[str], Mapping[RequestKey, str]]

# Every backend a spec may name: its kind (the text before the first ':') and its provider class.
BACKENDS: dict[str, str | type[ModelBackend]] = {
    "ollama": "cuda_llm.engine.llm.ollama_provider:OllamaProvider",
    "openai": "cuda_llm.engine.llm.openai_provider:OpenAIProvider",
    "replay": "cuda_llm.engine.llm.replay_provider:ReplayProvider",
    "manual": "cuda_llm.engine.llm.manual_provider:ManualProvider",
}

SERVER_FLAGS = {"host": "--host", "base_url": "--base-url"}


class ModelBackend:
    """What a kind of model provider can do, declared on the provider's class."""

    kind: ClassVar[str]  # the spec's prefix: "ollama"
    name_hint: ClassVar[str] = "MODEL"  # what follows the ':' in help texts ("SESSION" for replay)
    takes_name: ClassVar[bool] = True  # False: the spec is the kind alone ("manual")
    # The option that names its server (--host or --base-url), None for a backend with no server.
    server_option: ClassVar[Literal["host", "base_url"] | None] = None
    key_env: ClassVar[str | None] = None  # the environment variable its server's key comes from
    # Where its server is when no option names one, for messages ("OLLAMA_HOST or the local default").
    default_server: ClassVar[str] = "the default server"
    replays: ClassVar[bool] = False  # answers from a recorded session rather than a model
    person_writes: ClassVar[bool] = False  # a person writes each reply (the TUI's editor; never headless)

    @classmethod
    def create(cls, spec: ModelSpec, server: str | None, load_replay: ReplayLoader | None) -> ModelProvider:
        """The provider for `spec`; `server` is the value of its server_option, if any."""
        raise NotImplementedError

    @classmethod
    def server_flag(cls) -> str | None:
        return SERVER_FLAGS.get(cls.server_option or "")

    @classmethod
    def recorded_server(cls, address: str) -> str:
        """A server option's value as server_of records it (no user name or password)."""
        from cuda_llm.engine.llm.http_errors import display_url

        return display_url(address)

    @classmethod
    def unnamed_server(cls) -> str | None:
        """The server this backend talks to when no option names one (an environment variable, or
        its library's default), as recorded; None for a backend with no server."""
        return None

    @classmethod
    def origin(cls) -> str:
        """How the record labels its replies: "replay" for a recording played back, else "model"."""
        return "replay" if cls.replays else "model"


def backend(kind: str) -> type[ModelBackend]:
    """The backend class of a registered kind (its module imported now); UserError for an unknown one."""
    target = BACKENDS.get(kind)
    if target is None:
        raise UserError(f"unknown model kind {kind!r}: {spec_help()}")
    if isinstance(target, str):
        module, _, name = target.partition(":")
        target = getattr(importlib.import_module(module), name)
    assert isinstance(target, type) and issubclass(target, ModelBackend), target
    return target


def kinds() -> tuple[str, ...]:
    return tuple(BACKENDS)


def spec_forms(named_only: bool = False) -> str:
    """ "ollama:MODEL, openai:MODEL, replay:SESSION or manual": the forms a spec takes, from BACKENDS
    (`named_only`: those of the backends a spec names with a name)."""
    forms = [f"{k}:{b.name_hint}" if (b := backend(k)).takes_name else k for k in BACKENDS]
    if named_only:
        forms = [f for f, k in zip(forms, BACKENDS, strict=True) if backend(k).takes_name]
    return ", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else "".join(forms)


def server_kinds() -> tuple[str, ...]:
    """The backends that talk to a server (what a named endpoint of the TUI's config may be)."""
    return tuple(k for k in BACKENDS if backend(k).server_option is not None)


def spec_help() -> str:
    """ "use ollama:MODEL, openai:MODEL or replay:SESSION": the backends a spec names with a name."""
    return "use " + spec_forms(named_only=True)


@dataclass(frozen=True)
class ModelSpec:
    kind: str  # a key of BACKENDS, lower case
    name: str  # the model, or the session a replay plays back; "" for a backend that takes none

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @property
    def backend(self) -> type[ModelBackend]:
        return backend(self.kind)


def parse_spec(text: str) -> ModelSpec:
    """The one reader of a spec's text. Only the first ':' separates the kind, so ollama model tags
    stay whole (ollama:qwen2.5-coder:32b); the kind is case-insensitive."""
    kind, _, name = text.strip().partition(":")
    kind, name = kind.strip().lower(), name.strip()
    if kind not in BACKENDS:
        raise UserError(f"unknown model spec {text!r}: {spec_help()}")
    found = backend(kind)
    if not found.takes_name:
        return ModelSpec(kind, "")
    if not name:
        raise UserError(f"unknown model spec {text!r}: {spec_help()}")
    return ModelSpec(kind, name)


def check_spec(text: str) -> None:
    """UserError for a spec's text that parse_spec would refuse, as a command line's parser checks it:
    a known kind followed by a name imports no backend (the common case costs nothing), anything
    else is parsed in full (and its error lists the backends)."""
    kind, _, name = text.strip().partition(":")
    if kind.strip().lower() in BACKENDS and name.strip():
        return
    parse_spec(text)


def person_writes(text: str | None) -> bool:
    """Whether a spec's text names a backend whose replies a person writes (False for none, or for
    a spec that does not parse: that error is the session's to report)."""
    try:
        return bool(text) and parse_spec(text or "").backend.person_writes
    except UserError:
        return False


def spec_of(provider: Any) -> ModelSpec:
    """The spec a provider answers for (`provider.spec` is its text, as recorded with its session)."""
    return parse_spec(provider.spec)


def provider_for(
    spec: ModelSpec,
    host: str | None = None,
    base_url: str | None = None,
    load_replay: ReplayLoader | None = None,
) -> ModelProvider:
    """The provider for a spec. `host` or `base_url` goes to the backend whose server option it is;
    `load_replay` reads a session's recorded replies (the sessions store supplies it)."""
    found = spec.backend
    server = {"host": host, "base_url": base_url}.get(found.server_option or "")
    return found.create(spec, server, load_replay)


def parse_model_spec(
    text: str,
    host: str | None = None,
    base_url: str | None = None,
    load_replay: ReplayLoader | None = None,
) -> ModelProvider:
    """The provider for a spec's text (parse_spec, then provider_for)."""
    return provider_for(parse_spec(text), host, base_url, load_replay)


def server_of(provider: Any) -> str | None:
    """The server a provider talks to, as recorded with its session (never a key, nor a user name
    or password in the URL); None for providers with no server (replay, manual)."""
    from cuda_llm.engine.llm.http_errors import display_url

    where = getattr(provider, "where", None)
    if spec_of(provider).backend.server_option is None or not where:
        return None
    return display_url(where)
