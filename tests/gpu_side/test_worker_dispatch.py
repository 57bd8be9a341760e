"""The GPU worker's request loop (engine/gpu/worker_process.serve) without a GPU: its state stands in
for CUDA, its handlers record what reached them. Each request type reaches its own handler, an
unknown one gets a refusal and the loop goes on, a handler's failure is reported and the loop goes
on, and shutdown ends it."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from cuda_llm.engine.gpu import protocol as P
from cuda_llm.engine.gpu import worker_process
from cuda_llm.engine.gpu.wire import read_message, write_message


class _State:
    def __init__(self, device_index: int, settings: object) -> None:
        self.info = {"device": device_index}


def _serve(monkeypatch: pytest.MonkeyPatch, *requests: object) -> tuple[int, list[P.Response], list[str]]:
    reached: list[str] = []

    def handler(name: str):
        def handle(state: object, req: object) -> P.Response:
            reached.append(f"{name}:{type(req).__name__}")
            if getattr(req, "task_folder", "") == "boom":
                raise RuntimeError("a worker-side bug")
            return P.Response(ok=True, result=name)

        return handle

    monkeypatch.setattr(worker_process, "WorkerState", _State)
    monkeypatch.setattr(worker_process, "_context_healthy", lambda state: True)
    for name in ("validate", "profile", "peaks", "torch_compile"):
        monkeypatch.setattr(worker_process, f"handle_{name}", handler(name))
    stream_in = io.BytesIO()
    for message in (P.WorkerHello(device_index=3), *requests):
        write_message(stream_in, message)
    stream_in.seek(0)
    stream_out = io.BytesIO()
    code = worker_process.serve(stream_in, stream_out)
    stream_out.seek(0)
    responses = []
    while True:
        try:
            responses.append(read_message(stream_out))
        except EOFError:
            return code, responses, reached


def test_each_request_reaches_its_own_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = SimpleNamespace()  # the handlers are stand-ins: nothing reads the program
    program = P.ProgramRef("r1-1", b"", plan)  # type: ignore[arg-type]  # a stand-in plan
    code, responses, reached = _serve(
        monkeypatch,
        P.ValidateRequest("t", program),
        P.ProfileRequest("t", (program,)),
        P.PeaksRequest(),
        P.TorchCompileRequest("t"),
        P.ShutdownRequest(),
    )
    assert code == 0
    assert reached == [
        "validate:ValidateRequest",
        "profile:ProfileRequest",
        "peaks:PeaksRequest",
        "torch_compile:TorchCompileRequest",
    ]
    assert responses[0].result == {"device": 3}  # the hello's answer: the state's facts
    assert [r.result for r in responses[1:5]] == ["validate", "profile", "peaks", "torch_compile"]
    assert responses[-1].ok and len(responses) == 6


def test_an_unknown_request_is_refused_and_a_handler_s_bug_reported_and_the_loop_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, responses, reached = _serve(monkeypatch, "not a request", P.TorchCompileRequest("boom"), P.PeaksRequest())
    assert code == 0  # the input ended: the loop returned
    unknown, bug, peaks = responses[1:]
    assert not unknown.ok and unknown.error == "unknown request str"
    assert not bug.ok and bug.error == "RuntimeError: a worker-side bug" and not bug.fatal
    assert peaks.ok and peaks.result == "peaks"
    assert reached == ["torch_compile:TorchCompileRequest", "peaks:PeaksRequest"]
