"""What a session is started with: the command line's defaults (server, database, device) and the
start screen's choices, turned into the engine's SessionOptions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cuda_llm.engine.core.settings import LoopSettings
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
    options = SessionOptions(
        task=c.task,
        model=c.model,
        loop=loop,
        db=defaults.db,
        host=c.host or defaults.host,
        base_url=c.base_url or defaults.base_url,
        compile_only=defaults.compile_only,
        arch=defaults.arch,
        gpu=defaults.gpu,
        cluster=defaults.cluster,
    )
    return SessionRequest(options, c.auto_accept)


def resume_session(defaults: Defaults, session_id: int, auto_accept: bool, host: str | None = None) -> SessionRequest:
    options = SessionOptions(
        task=None,
        model=None,
        loop=defaults.loop,
        db=defaults.db,
        host=host or defaults.host,
        base_url=defaults.base_url,
        compile_only=defaults.compile_only,
        arch=defaults.arch,
        gpu=defaults.gpu,
        cluster=defaults.cluster,
        resume=session_id,
    )
    return SessionRequest(options, auto_accept)
