"""Where the time went: each judgement carries its phases (compile, inputs, reference, validation,
timing), the session's record keeps them, and the headless run prints them under each candidate's line
and beside the round's timing."""

from __future__ import annotations

import dataclasses
import io

from fakes.fake_gpu import FakeGpu, fake_environment
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.app.cli.progress import ProgressPrinter
from cuda_llm.engine.judge.judgement import PHASES, phases_text
from cuda_llm.engine.store.sessions import SessionStore


class TimedFakeGpu(FakeGpu):
    """Scripted answers that say where the worker spent its time, as the real worker's do."""

    async def validate(self, task, program):
        report = await super().validate(task, program)
        phases = {"reference": 0.25, "upload": 0.05, "run": 0.1}
        return dataclasses.replace(report, elapsed_s=0.5, load_s=0.01, phases_s=phases)

    async def profile(self, task, programs, library=False, torch_compile=False):
        report = await super().profile(task, programs, library, torch_compile)
        return dataclasses.replace(report, elapsed_s=1.5, phases_s={"sample": 1.0, "set-up": 0.5})


async def test_each_phase_is_recorded_and_printed(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False)
    out = io.StringIO()
    result, rec = await run_session(opts, host=llm_server.url, environment=fake_environment(TimedFakeGpu()))
    store = SessionStore(tmp_path / "sessions.db")
    try:
        (cand,) = [r for r in store.candidates(result.session_id) if r.label == "r1-1"]
    finally:
        store.close()
    phases = cand.judgement.phases()
    # Counters are tried after timing (here they say why there are none: no ncu without a GPU).
    assert list(phases) == ["compile", "inputs", "reference", "validation", "timing", "counters"] == list(PHASES)
    assert phases["compile"] > 0 and phases["inputs"] == 0.05 and phases["reference"] == 0.25
    assert abs(phases["validation"] - (0.5 - 0.25 - 0.05 + 0.01)) < 1e-9, "the rest of validation, and the load"
    assert phases["timing"] == 1.5
    printer = ProgressPrinter(out, live=False)
    for event in rec.events:
        printer(event)
    lines = out.getvalue().splitlines()
    took = [i for i, line in enumerate(lines) if line.startswith("    took: compile ")]
    assert took and "validation 0.21 s, timing 1.5 s" in lines[took[-1]], lines
    assert lines[took[-1] - 1].startswith("  r1-1: correct"), "under the candidate's own line"
    assert any(line.endswith("baseline 100.0 us (timing took 1.5 s)") for line in lines), lines


def test_phases_in_words():
    assert phases_text({"compile": 0.123, "reference": 2.25, "timing": 12.0}) == (
        "compile 0.12 s, reference 2.2 s, timing 12.0 s"
    )
