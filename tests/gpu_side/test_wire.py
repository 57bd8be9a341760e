"""The pipe's framing (engine/gpu/wire.py) read back by both ends: what the engine frames, the worker's
blocking reader reads, and what the worker writes, the engine's asyncio reader reads; a pipe that ends
inside a message is an end, never a half message."""

from __future__ import annotations

import asyncio
import io

import pytest

from cuda_llm.engine.gpu.client import GpuUnavailable, GpuWorker
from cuda_llm.engine.gpu.protocol import Response, ShutdownRequest
from cuda_llm.engine.gpu.wire import HEADER, frame, read_message, receive, write_message


def test_the_worker_reads_what_the_engine_frames():
    stream = io.BytesIO(frame(ShutdownRequest()) + frame({"n": 3, "text": "é" * 1000}))
    assert read_message(stream) == ShutdownRequest()
    assert read_message(stream) == {"n": 3, "text": "é" * 1000}
    with pytest.raises(EOFError):
        read_message(stream)


def test_the_engine_reads_what_the_worker_writes():
    out = io.BytesIO()
    write_message(out, Response(ok=True, result=[1, 2]))
    write_message(out, Response(ok=False, error="boom", fatal=True))

    async def read_both() -> list[Response]:
        reader = asyncio.StreamReader()
        reader.feed_data(out.getvalue())
        reader.feed_eof()
        return [await receive(reader), await receive(reader)]

    assert asyncio.run(read_both()) == [Response(ok=True, result=[1, 2]), Response(ok=False, error="boom", fatal=True)]


def test_a_pipe_that_ends_inside_a_message_is_an_end():
    cut = frame(Response(ok=True, result="x" * 100))[: HEADER.size + 10]
    with pytest.raises(EOFError):
        read_message(io.BytesIO(cut))

    async def read_cut() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(cut)
        reader.feed_eof()
        await receive(reader)

    with pytest.raises(asyncio.IncompleteReadError):
        asyncio.run(read_cut())


async def test_a_real_worker_answers_its_hello_through_the_wire(tmp_path):
    """The worker process and the engine's client speak it to each other: without a GPU the worker's
    own answer (it could not start) comes back, not a dead or silent pipe."""
    worker = GpuWorker(log_dir=tmp_path)
    try:
        info = await worker.start()
    except GpuUnavailable as exc:
        assert str(exc).startswith("GPU worker could not start: "), str(exc)
    else:
        assert info.arch.startswith("sm_")
    finally:
        await worker.close()
