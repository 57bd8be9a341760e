"""What a model server that sends one enormous line costs us: the session's peak memory and what
lands in the database.

A loopback Ollama server (the test suite's, in a process of its own so its memory is not ours)
answers every request with a single NDJSON line of --mib MiB of text. A compile-only session of one
round runs against it in this process. Prints the peak resident memory of this process, the size of
the database afterwards, and how the session ended. The response cap (GenerateOptions.
max_response_bytes) should end the request long before the line is held, and nothing of it should
be stored.

    python -m bench.huge_reply [--mib 300] [--protocol ollama|openai]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _serve(mib: int, ready, stop) -> None:
    from llm_servers import LoopbackLLMServer, Reply

    with LoopbackLLMServer() as server:
        server.default = Reply.text("x" * (mib << 20))
        ready.put((server.url, server.openai_url))
        stop.wait()


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def _session(db: Path, url: str, protocol: str):
    from cuda_llm.engine.core.settings import LoopSettings, RetryPolicy
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.fsr.session import SessionOptions, open_session

    loop = LoopSettings(candidates=1, rounds=1, repairs=0, patience=None, retry=RetryPolicy(attempts=1))
    options = SessionOptions(
        task="vector_add",
        model=f"{protocol}:loop-model",
        loop=loop,
        db=str(db),
        compile_only=True,
        host=url if protocol == "ollama" else None,
        base_url=url if protocol == "openai" else None,
    )
    session = await open_session(options, Controller(auto_accept=True, stop_when_paused=True))
    try:
        return await session.run()
    finally:
        await session.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=300)
    parser.add_argument("--protocol", choices=("ollama", "openai"), default="ollama")
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(args.mib, ready, stop), daemon=True)
    server.start()
    try:
        ollama_url, openai_url = ready.get(timeout=600)
        before = _peak_rss_mib()
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "sessions.db"
            started = time.monotonic()
            result = asyncio.run(_session(db, ollama_url if args.protocol == "ollama" else openai_url, args.protocol))
            took = time.monotonic() - started
            db_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.name.startswith("sessions.db"))
    finally:
        stop.set()
        server.join(30)
    print(f"reply: one {args.protocol} line of {args.mib} MiB; session {result.status} in {took:.1f} s:")
    print(f"  {result.reason}")
    print(f"peak resident memory of this process: {_peak_rss_mib():.0f} MiB (before the session: {before:.0f} MiB)")
    print(f"database after the session: {db_bytes / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
