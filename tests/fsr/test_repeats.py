"""A reply that repeats a program the session has judged (engine/fsr/repeats.py): not compiled, run or
timed again; its verdict is the first one's, said as a repeat, and the next prompt tells the model.
Sessions on the fake GPU (tests/fakes) against the loopback ollama server."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from pathlib import Path

from fakes.fake_gpu import FakeGpu, fake_environment
from llm_servers import Reply
from scripted import BROKEN_KERNEL, GOOD_KERNEL, GOOD_PLAN, chunked, reply
from session_driver import Recorder, options, run_session

from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller

ROOT = Path(__file__).resolve().parents[2]
BASELINE_REPLY = reply(
    (ROOT / "tasks" / "vector_add" / "baseline.cu").read_text(),
    json.loads((ROOT / "tasks" / "vector_add" / "baseline.json").read_text()),
    note="The baseline is already as fast as it gets.",
)
CRASHING_REPLY = reply(
    GOOD_KERNEL.replace("vadd4", "vadd_crash"),
    {"launches": [dict(GOOD_PLAN["launches"][0], kernel="vadd_crash")]},
)


async def session(tmp_path, llm_server, candidates: int, rounds: int, repairs: int = 0):
    opts = options(tmp_path, "ollama:loop-model", candidates=candidates, rounds=rounds, repairs=repairs)
    result, rec = await run_session(
        dataclasses.replace(opts, compile_only=False), host=llm_server.url, environment=fake_environment(FakeGpu())
    )
    assert result.status == "finished", result.reason
    prompts = [c.messages[-1]["content"] for c in llm_server.chat_requests]
    return rec, prompts


def stages(rec) -> Counter[tuple[str, str]]:
    """(stage, label) of each verdict, and ("sent", label) for each candidate sent to the GPU."""
    sent = Counter(("sent", e.label) for e in rec.of(ev.ValidationStarted))
    return sent + Counter((e.stage, e.judgement.label) for e in rec.of(ev.CandidateJudged))


def judged(rec, label: str):
    return [e.judgement for e in rec.of(ev.CandidateJudged) if e.judgement.label == label][-1]


def first_and_repeat(rec, labels: tuple[str, str]) -> tuple[str, str]:
    """Which of two slots with the same kernel was judged (its reply may arrive second on a busy
    machine), and which repeated it."""
    seen = stages(rec)  # compiled (a compile error's verdict, or sent to the GPU): judged, not a repeat
    compiled = [label for label in labels if seen[("compile", label)] or seen[("sent", label)]]
    assert len(compiled) == 1, stages(rec)
    return compiled[0], next(label for label in labels if label != compiled[0])


async def test_two_slots_that_write_the_same_kernel_are_judged_and_timed_once(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    rec, prompts = await session(tmp_path, llm_server, candidates=2, rounds=2)
    seen = stages(rec)
    first, again = first_and_repeat(rec, ("r1-1", "r1-2"))
    assert seen[("sent", first)] == 1 and seen[("profile", first)] == 1
    assert seen[("profile", again)] == 0, seen
    repeat = judged(rec, again)
    assert repeat.status == "correct" and repeat.timing is None and repeat.repeat_of == first
    assert repeat.message == f"the same kernel and launch plan as {first}, not judged again (correct)"
    assert repeat.candidate is not None and repeat.candidate.label == again
    # Round 2's two replies are the round-1 kernel again, the best by then: neither is judged.
    assert all(seen[(stage, label)] == 0 for stage in ("sent", "profile") for label in ("r2-1", "r2-2"))
    assert "round 1: 2 of 2 candidates correct" in prompts[2]
    assert f"{again} repeated {first}, not judged again" in prompts[2]
    assert "repeated" not in prompts[0]


async def test_the_baseline_written_back_is_a_repeat_of_the_baseline(tmp_path, llm_server):
    llm_server.default = chunked(BASELINE_REPLY)
    rec, prompts = await session(tmp_path, llm_server, candidates=1, rounds=2)
    seen = stages(rec)
    assert not [key for key in seen if key[1] != "baseline" and key[0] in ("sent", "profile")], seen
    assert judged(rec, "r1-1").message == "the same kernel and launch plan as the baseline, not judged again (correct)"
    assert "r1-1 repeated the baseline, not judged again" in prompts[1]


async def test_a_failure_repeated_carries_its_reason(tmp_path, llm_server):
    llm_server.script(chunked(reply(BROKEN_KERNEL)), chunked(reply(BROKEN_KERNEL)))
    llm_server.default = chunked(reply())
    rec, prompts = await session(tmp_path, llm_server, candidates=2, rounds=1, repairs=1)
    first_label, again = first_and_repeat(rec, ("r1-1", "r1-2"))
    first, repeat = judged(rec, first_label), judged(rec, again)
    assert first.status == repeat.status == "compile_error"
    assert repeat.message == f"the same kernel and launch plan as {first_label}, not judged again: {first.message}"
    assert "undefined_thing" in first.message
    # The repair prompt shows the first's errors and code, and the repeat in its one line.
    repair = prompts[2]
    section = repair.split(f"## {again}: compile error\n")[1].split("\n## ")[0]
    assert section.strip() == repeat.message, section
    assert repair.count("its code:") == 1 and repair.count(first.compile.diagnostics[0].message) == 3, repair
    first_and_repeat(rec, ("r1-fix1-1", "r1-fix1-2"))  # the repair's kernel, another program: judged once


async def test_a_crash_is_judged_again(tmp_path, llm_server):
    """A crash may be the machine's (a lost worker, a sticky fault of another job): a repeat of it
    runs again instead of taking the verdict over."""
    llm_server.default = chunked(CRASHING_REPLY)
    rec, _prompts = await session(tmp_path, llm_server, candidates=2, rounds=1)
    assert judged(rec, "r1-1").status == judged(rec, "r1-2").status == "crashed"
    assert "not judged again" not in judged(rec, "r1-2").message
    assert rec.of(ev.CandidateJudged) and stages(rec)[("sent", "r1-2")] == 1


async def test_a_verdict_changed_by_timing_is_what_its_repeats_take(tmp_path, llm_server):
    """The fake GPU's `vadd_recheck` validates, then fails the re-check after timing: the same kernel
    in the next round is a repeat of that final verdict, not of the validation's 'correct'."""
    recheck = GOOD_KERNEL.replace("vadd4", "vadd_recheck")
    llm_server.default = chunked(reply(recheck, {"launches": [dict(GOOD_PLAN["launches"][0], kernel="vadd_recheck")]}))
    rec, _prompts = await session(tmp_path, llm_server, candidates=1, rounds=2)
    first, repeat = judged(rec, "r1-1"), judged(rec, "r2-1")
    assert first.status == "wrong", first.message
    assert repeat.status == "wrong" and repeat.message.startswith("the same kernel and launch plan as r1-1, not judged")
    assert first.message in repeat.message


async def test_a_resumed_round_does_not_time_a_repeat_judged_before_the_stop(tmp_path, llm_server):
    """Two slots wrote the same kernel and were judged, the third was still being written when the
    session stopped: the resume judges the third and times the first, never the repeat."""
    release = threading.Event()
    third = reply(GOOD_KERNEL.replace("{\n", "{\n    // the third slot's own\n", 1))
    llm_server.script(chunked(reply()), chunked(reply()), Reply.held(release, third))
    control = Controller(auto_accept=True, stop_when_paused=True)
    recorder = Recorder()

    def stop_once_two_are_judged(event: ev.Event) -> None:
        recorder(event)
        validated = [e for e in recorder.of(ev.CandidateJudged) if e.stage == "validate"]
        if isinstance(event, ev.CandidateJudged) and len(validated) == 2:
            control.stop()

    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=3, rounds=1), compile_only=False)
    env = fake_environment(FakeGpu())
    try:
        stopped, _ = await run_session(
            opts,
            host=llm_server.url,
            control=control,
            recorder=stop_once_two_are_judged,  # type: ignore[arg-type]  # a subscriber, as a Recorder is
            environment=env,
        )
    finally:
        release.set()
    assert stopped.status == "stopped" and not recorder.of(ev.RoundProfiled)
    repeats = [e.judgement.label for e in recorder.of(ev.CandidateJudged) if "not judged again" in e.judgement.message]
    assert len(repeats) == 1, [e.judgement.message for e in recorder.of(ev.CandidateJudged)]

    llm_server.default = chunked(third)
    resumed, rec = await run_session(
        dataclasses.replace(opts, resume=stopped.session_id),
        host=llm_server.url,
        environment=fake_environment(FakeGpu()),
    )
    assert resumed.status == "finished", resumed.reason
    profiled = {e.judgement.label for e in rec.of(ev.CandidateJudged) if e.stage == "profile"} - {"baseline"}
    assert len(profiled) == 2 and repeats[0] not in profiled, profiled
    assert not [e for e in rec.of(ev.ValidationStarted) if e.label == repeats[0]]
