"""Before a new session is recorded: can its model answer at all? A server that cannot be reached, a
key it asks for and does not get, or a model it does not have makes every request of the session
fail; found here, each is one line and no session is created (a session for nothing, retried three
times and left paused, was the commonest leftover in a user's database). The same listing `doctor`
and the start screen show. A server that does not list its models (some OpenAI-compatible ones
answer 404) or answers slowly is given the benefit of the doubt: the session's own requests decide."""

from __future__ import annotations

import difflib
import os

from cuda_llm.engine.llm.base import ModelError, ModelProvider
from cuda_llm.engine.llm.http_errors import MODELS_LISTED
from cuda_llm.engine.llm.spec import spec_of

# Kinds of listing failure that every request of the session would meet as well (bad_request: the
# server answered with a redirect to another server, or refused the listing outright).
FATAL = frozenset({"unreachable", "auth", "bad_request"})


def offers(names: list[str], model: str) -> bool:
    """Whether the listing holds `model` (ollama answers for "llama3" with "llama3:latest")."""
    return model in names or f"{model}:latest" in names


async def check_model(provider: ModelProvider) -> None:
    """Raise ModelError (a UserError: one line) when the session's model cannot answer."""
    spec = spec_of(provider)
    backend = spec.backend
    if backend.server_option is None:  # replay and manual talk to no server
        return
    model = spec.name
    try:
        names = await provider.list_models()
    except ModelError as exc:
        if exc.kind in FATAL:
            # (A refusal that is not about the key, such as a redirect or a wrong base URL, says its own cause.)
            if backend.key_env and not os.environ.get(backend.key_env) and exc.kind != "bad_request":
                raise ModelError(exc.kind, f"{exc} ({backend.key_env} is not set)") from None
            raise
        return
    if not names or offers(names, model):
        return
    shown = ", ".join(names[:MODELS_LISTED]) + (
        f" and {len(names) - MODELS_LISTED} more" if len(names) > MODELS_LISTED else ""
    )
    close = difflib.get_close_matches(model, names, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    raise ModelError("not_found", f"model {model!r} is not on {provider.where} (the server has: {shown}{guess})")
