"""The response cap counts decoded bytes at the cap itself, not at some multiple of it
(engine/llm/bounded.py): a compressed line a quarter over the cap is refused as too large, where a
cap loosened even 2x would take it and cut it at the character cap instead."""

from __future__ import annotations

import dataclasses

import pytest
from llm_servers import Reply

from cuda_llm.engine.llm.base import ModelError

from .wire import FAST, KEY, PROMPT, Wire

CAP = 1 << 20
# Enough tokens that the character cap is far above the line: only the response cap can stop it.
CAPPED = dataclasses.replace(FAST, max_response_bytes=CAP, max_tokens=1 << 20)


@pytest.mark.parametrize("status", [200, 500], ids=["stream", "error-body"])
async def test_a_compressed_line_a_quarter_over_the_cap_is_too_large(wire: Wire, status: int) -> None:
    wire.server.script(Reply.gzip_bomb(CAP + CAP // 4, status=status))

    with pytest.raises(ModelError) as caught:
        await wire.provider().complete(PROMPT, CAPPED, KEY)

    assert caught.value.kind == "too_large", caught.value


async def test_the_same_line_under_a_cap_above_it_arrives(wire: Wire) -> None:
    """The control: with the cap above the line, the very same reply is taken whole, so the refusal
    above is the cap's doing and not the line's."""
    wire.server.script(Reply.gzip_bomb(CAP + CAP // 4))
    roomy = dataclasses.replace(CAPPED, max_response_bytes=2 * CAP)

    done = await wire.provider().complete(PROMPT, roomy, KEY)

    assert done.text == "x" * (CAP + CAP // 4)
