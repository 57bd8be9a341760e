"""Textual messages: the contract between the session worker, the pollers and the widgets.

The engine emits its events on the asyncio loop that runs the session, which in the TUI is the
app's own loop (an async worker). The run screen's subscriber wraps each event in one of these
messages and posts it, so every widget update happens in the ordinary message flow and nothing
in the engine ever calls into a widget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # annotations only: the start screen's first frame must not wait for the engine's events
    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.gpu.telemetry import TelemetrySample


@dataclass
class EngineEvent(Message):
    """Any engine event other than streamed tokens."""

    event: ev.Event


@dataclass
class TokensArrived(Message):
    """Streamed reply text for one candidate: the most frequent message by far, kept small."""

    label: str
    text: str


@dataclass
class SessionOpened(Message):
    session_id: int
    task: str
    model: str
    notice: str | None  # "no CUDA driver: compile-only for sm_90"
    manual: bool  # the person writes the candidates
    server: str = ""  # the model's server (ollama host or OpenAI base URL); empty when it has none


@dataclass
class SessionEnded(Message):
    """The session's coroutine returned: finished, stopped, or paused by a fault."""

    status: str
    reason: str


@dataclass
class SessionError(Message):
    """Opening or running the session raised: one line for the status bar. The app goes on."""

    message: str


@dataclass
class JumpToLine(Message):
    """A compiler diagnostic was chosen: show that line of the candidate's source."""

    line: int
    column: int


@dataclass
class CandidateChosen(Message):
    """The person picked a candidate in the tree (None: follow the session again)."""

    label: str | None


@dataclass
class TelemetryRead(Message):
    """One NVML sample (None: no GPU or no NVML)."""

    sample: TelemetrySample | None


@dataclass
class ModelsListed(Message):
    """The models a server offers, or why they could not be listed (start screen)."""

    source: str  # "ollama"
    url: str
    models: list[str]
    error: str | None = None
