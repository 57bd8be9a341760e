"""How a message crosses the pipe between the engine and a GPU worker: a pickle behind its length
(8 bytes, little-endian). Both ends use this module: the worker's blocking streams
(engine/gpu/worker_process.py) and the engine's asyncio pipes (engine/gpu/client.py). The standard
library only, so the worker imports nothing else before it has answered its hello.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import IO, Any

HEADER = struct.Struct("<Q")  # the payload's length


def frame(message: Any) -> bytes:
    """`message` as it goes down the pipe: its length, then its pickle."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_message(stream: IO[bytes]) -> Any:
    """The next message from a blocking stream; EOFError when it ends first."""
    (size,) = HEADER.unpack(_read_exact(stream, HEADER.size))
    return pickle.loads(_read_exact(stream, size))


def write_message(stream: IO[bytes], message: Any) -> None:
    stream.write(frame(message))
    stream.flush()


async def receive(reader: asyncio.StreamReader) -> Any:
    """The next message from an asyncio pipe; asyncio.IncompleteReadError when it ends first."""
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    return pickle.loads(await reader.readexactly(size))
