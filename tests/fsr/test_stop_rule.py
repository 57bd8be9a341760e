"""The stop rule judges the model's candidates: a baseline that already meets the roofline target (PyTorch
eager on an elementwise module reaches 90% of it) does not end a session before the model is asked, and
the line that ends it names the candidate that reached the target."""

from __future__ import annotations

import dataclasses

from fakes.fake_gpu import FakeGpu, fake_environment
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.engine.fsr import events as ev

# The fake GPU times vector_add's baseline at 100 us and a candidate at 50 us against a 20 us floor:
# 20% and 40% of the roofline, both over this target.
LOW_TARGET = 0.10


async def test_a_baseline_at_the_target_still_asks_the_model(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    opts = dataclasses.replace(
        options(tmp_path, "ollama:loop-model", candidates=1, rounds=3, target_roofline=LOW_TARGET),
        compile_only=False,
    )
    result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    assert len(llm_server.chat_requests) == 1, "the model is asked once; its candidate then meets the target"
    notices = [n.message for n in rec.of(ev.Notice)]
    assert any(m.startswith("the baseline already reaches 20%") and "the model is asked" in m for m in notices), notices
    assert result.rounds == 1
    assert result.reason.startswith("the best candidate, r1-1, reached 40%"), result.reason
    assert result.reason.endswith("(target 10%)"), result.reason


async def test_without_a_target_the_baseline_says_nothing(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False)
    result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    assert not [n for n in rec.of(ev.Notice) if "baseline already reaches" in n.message]
    assert result.reason == "1 rounds done"
