"""The start screen's list of models: the local ollama server's, the config's named endpoints, manual,
and the latest stored sessions to replay; and which one is chosen when the person has chosen none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuda_llm.app.catalog import StoredSession
from cuda_llm.app.config import Endpoint
from cuda_llm.engine.llm.spec import backend, parse_spec, person_writes

# Stored sessions offered for replay, the latest first.
REPLAYS_LISTED = 10


@dataclass(frozen=True)
class ModelChoice:
    spec: str
    title: str
    host: str | None = None
    base_url: str | None = None
    endpoint: str | None = None


def model_choices(
    ollama_models: Sequence[str],
    host: str | None,
    endpoints: Sequence[Endpoint],
    sessions: Sequence[StoredSession],
) -> list[ModelChoice]:
    """The list in its order: the local server's models, each endpoint, manual, the replays."""
    choices = [ModelChoice(f"ollama:{m}", f"ollama  {m}", host=host) for m in ollama_models]
    for ep in endpoints:
        model = ep.model or "(type the model below)"
        # The endpoint's URL goes to its backend's server option (host for ollama, base_url for openai).
        server = {backend(ep.kind).server_option or "": ep.url}
        choices.append(
            ModelChoice(
                ep.spec,
                f"{ep.name}  {ep.kind} {model}",
                host=server.get("host"),
                base_url=server.get("base_url"),
                endpoint=ep.name,
            )
        )
    choices.append(ModelChoice("manual", "manual  you write each kernel in the editor"))
    for s in sessions[:REPLAYS_LISTED]:
        choices.append(ModelChoice(f"replay:{s.id}", f"replay {s.id}  {s.task} · {s.model} · {s.status}"))
    return choices


def default_choice(choices: Sequence[ModelChoice], local_models: bool) -> int:
    """The one chosen when nothing is: the first model the local server offers (`local_models`: it
    listed some, and they come first), else the first endpoint of the same kind, else manual, so the
    defaults start a session (Enter, Enter, s). An endpoint's backend is asked for its kind only where
    there is no local model (its module, with its HTTP stack, would otherwise load before the first
    frame)."""
    if local_models:
        return 0
    if any(m.endpoint for m in choices):
        from cuda_llm.engine.llm.ollama_provider import OllamaProvider

        first = next(
            (i for i, m in enumerate(choices) if m.endpoint and parse_spec(m.spec).kind == OllamaProvider.kind), None
        )
        if first is not None:
            return first
    return next(i for i, m in enumerate(choices) if person_writes(m.spec))
