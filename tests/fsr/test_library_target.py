"""The vendor library's figure reaches the session: timed once at its start (a LibraryTimed event)
and put in front of the model as a target; with no figure, the prompt does not mention one."""

from __future__ import annotations

import dataclasses

from fakes.fake_gpu import FakeGpu, fake_environment
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.engine.fsr import events as ev


async def _session(tmp_path, llm_server, gpu: FakeGpu):
    llm_server.default = chunked(reply())
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False)
    _result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(gpu))
    (timed,) = rec.of(ev.LibraryTimed)
    return timed.library, llm_server.chat_requests[0].messages[-1]["content"]


async def test_the_library_figure_is_a_target_in_the_prompt(tmp_path, llm_server):
    library, prompt = await _session(tmp_path, llm_server, FakeGpu(library_us=40))
    assert library.name == "CuPy elementwise add" and library.median_us == 40
    assert "the vendor library (CuPy elementwise add) takes 40.0 us on this GPU, 2.50x the baseline" in prompt


async def test_without_a_library_figure_the_prompt_names_none(tmp_path, llm_server):
    library, prompt = await _session(tmp_path, llm_server, FakeGpu())
    assert library.timing is None and library.note
    assert "vendor library" not in prompt
