"""Format errors: a reply that breaks the contract. The message is sent back to the model as is."""

from __future__ import annotations

from cuda_llm.engine.errors import UserError


class FormatError(UserError):
    """A reply or launch plan that breaks the contract; `str()` is written for the model."""
