"""What a session is started with: the command line's defaults (server, database, device) and the
start screen's choices, turned into the engine's SessionOptions. `session_options` is the one place that
builds a SessionOptions: the start screen, `run` and `bench` all go through it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cuda_llm.engine.core.settings import LoopSettings

if TYPE_CHECKING:  # imported when a session is built: the session module brings the whole loop with it
    from cuda_llm.engine.fsr.session import SessionOptions


@dataclass(frozen=True)
class Defaults:
    """From the command line (or a test): where the servers and the database are, which device."""

    db: str | None = None
    host: str | None = None  # ollama server
    base_url: str | None = None  # OpenAI-compatible server
    compile_only: bool = False
    arch: str | None = None
    gpu: str | None = None  # --gpus as given: "0,1"; None: every GPU (with `cluster`: a GPU model)
    cluster: str | None = None  # a Ray cluster's address: sessions judge on its GPUs
    loop: LoopSettings = field(default_factory=LoopSettings)  # the base the start screen's choices change


@dataclass(frozen=True)
class SessionRequest:
    options: SessionOptions
    auto_accept: bool = False


@dataclass(frozen=True)
class Choices:
    """The start screen's fields."""

    task: str
    model: str
    candidates: int
    rounds: int
    repairs: int
    patience: int  # 0: never
    target_roofline: float  # 0: never
    auto_accept: bool
    host: str | None = None  # from a named endpoint, else the defaults'
    base_url: str | None = None


def new_session(defaults: Defaults, c: Choices) -> SessionRequest:
    loop = dataclasses.replace(
        defaults.loop,
        candidates=c.candidates,
        rounds=c.rounds,
        repairs=c.repairs,
        patience=c.patience or None,
        target_roofline=c.target_roofline or None,
        auto_accept=c.auto_accept,
    )
    where = dataclasses.replace(defaults, host=c.host or defaults.host, base_url=c.base_url or defaults.base_url)
    return SessionRequest(session_options(where, c.task, c.model, loop), c.auto_accept)


def resume_session(defaults: Defaults, session_id: int, auto_accept: bool, host: str | None = None) -> SessionRequest:
    where = dataclasses.replace(defaults, host=host or defaults.host)
    options = session_options(where, None, None, resume=session_id)
    return SessionRequest(options, auto_accept)


def session_options(
    where: Defaults,
    task: str | None,
    model: str | None,
    loop: LoopSettings | None = None,
    *,
    resume: int | None = None,
    overrides: dict[str, object] | None = None,
    switch_server: bool = False,
    counters: str | None = None,
    torch_compile: bool = False,
) -> SessionOptions:
    """The engine's SessionOptions: the servers, database and device from `where`, the loop's settings
    from `loop` (None: `where`'s), the rest as given."""
    from cuda_llm.engine.fsr.session import SessionOptions

    return SessionOptions(
        task=task,
        model=model,
        loop=where.loop if loop is None else loop,
        db=where.db,
        host=where.host,
        base_url=where.base_url,
        compile_only=where.compile_only,
        arch=where.arch,
        gpu=where.gpu,
        cluster=where.cluster,
        resume=resume,
        overrides=dict(overrides or {}),
        switch_server=switch_server,
        counters=counters,
        torch_compile=torch_compile,
    )
