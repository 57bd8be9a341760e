"""Assemble a runnable FSR session from options: the task, the judge, the model, the store, the loop.

The headless CLI and the TUI both start sessions through `open_session`; they differ only in how
they subscribe to the events and drive the controller.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_llm.engine.compile import nvrtc_library
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.settings import LoopSettings, Settings
from cuda_llm.engine.fsr.control import Controller
from cuda_llm.engine.fsr.events import EventBus
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.fsr.loop import FsrLoop, SessionResult
from cuda_llm.engine.fsr.loop import candidate_label as candidate_label  # for consumers: the session API
from cuda_llm.engine.fsr.prompt import PromptBuilder
from cuda_llm.engine.gpu.protocol import device_label
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment, Progress
from cuda_llm.engine.judge.judgement import Judgement, LibraryResult
from cuda_llm.engine.llm.base import ModelProvider
from cuda_llm.engine.llm.preflight import check_model
from cuda_llm.engine.llm.spec import parse_spec, provider_for, server_of
from cuda_llm.engine.store.session_ids import session_number
from cuda_llm.engine.store.sessions import SessionRecord, SessionStore
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import Task


@dataclass(frozen=True)
class SessionOptions:
    task: str | None  # name or folder; None when resuming
    model: str | None  # spec; None when resuming (the session's own model is used)
    loop: LoopSettings = field(default_factory=LoopSettings)
    db: str | None = None
    host: str | None = None  # ollama server
    base_url: str | None = None  # OpenAI-compatible server
    compile_only: bool = False
    arch: str | None = None
    gpu: str | None = None  # "0,1"; None: every GPU (with `cluster`: a GPU model, e.g. "H100")
    cluster: str | None = None  # a Ray cluster's address (ray://HOST:10001, auto): judge on its GPUs
    resume: int | None = None
    # Settings given explicitly on the command line when resuming (others come from the session).
    overrides: dict[str, object] = field(default_factory=dict)
    # A resumed session talks to the server it was recorded with; --host/--base-url naming another
    # one is refused unless this is set (the prompts, and a key, would go somewhere new).
    switch_server: bool = False
    # Which candidates' hardware counters are read ("off", "best", "all"); None: the settings' own.
    counters: str | None = None
    # Also time torch.compile beside eager, for a task imported from a PyTorch module (--torch-compile).
    torch_compile: bool = False


@dataclass
class Session:
    id: int
    task: Task
    loop: FsrLoop
    bus: EventBus
    control: Controller
    store: SessionStore
    env: JudgeEnvironment
    provider: ModelProvider
    resumed: bool

    async def run(self) -> SessionResult:
        return await self.loop.run(resumed=self.resumed)

    # What the UI and the CLI ask of a running session; they never reach into `loop` (the layer
    # contract and tests/test_layers.py keep it so: docs/architecture.md, "The session API").
    def model_in_use(self) -> ModelProvider:
        """The model the loop asks now: a switch (the TUI's `m`) replaces it at a safe point."""
        return self.loop.provider

    async def read_counters(self, label: str) -> Judgement | None:
        """A correct candidate's hardware counters, read now (FsrLoop.read_counters_of)."""
        return await self.loop.read_counters_of(label)

    async def library(self) -> LibraryResult:
        """The vendor-library figure, measured once per session (or why there is none)."""
        return await self.loop.judge.library()

    async def torch_compile(self) -> LibraryResult:
        """The torch.compile figure of an imported task, measured once per session (or why not)."""
        return await self.loop.judge.torch_compile()

    async def close(self) -> None:
        try:
            await self.provider.close()
        finally:
            await self.env.close()
            self.store.close()


def resume_server(record: SessionRecord, model: str, options: SessionOptions) -> tuple[str | None, str | None]:
    """(host, base_url) for resuming `record` with `model`: the server it was recorded with, so a
    resume never falls back to a default (or an environment variable) that points elsewhere; a
    different one only when asked for with switch_server."""
    spec = parse_spec(model)
    backend = spec.backend
    same_kind = spec.kind == parse_spec(record.model).kind
    recorded = record.server if same_kind else None
    served = backend.server_option is not None
    given = {"host": options.host, "base_url": options.base_url}
    asked = given.get(backend.server_option or "")
    flag = backend.server_flag() or "--host"
    if recorded is None and same_kind and served and asked is None and not options.switch_server:
        # Recorded by a cuda-llm that kept no server: the default (or an environment variable) may
        # point anywhere, api.openai.com included, and the prompts (and a key) would follow it.
        raise UserError(
            f"session {record.id} was recorded without its model server (by an older cuda-llm): name the "
            f"server it used with {flag}, or add --switch-server to send its prompts to "
            f"{backend.default_server}"
        )
    if not same_kind and served and not options.switch_server:
        # Another kind of model is another server: its prompts (and, for openai, the key) would go to
        # whatever the flag, an environment variable or the default names.
        where = asked or backend.default_server
        raise UserError(
            f"session {record.id} was recorded with {record.model} at {record.server or 'its default server'}; "
            f"{model} would send its prompts to {where}: add --switch-server to do that (with {flag} to name the "
            "server), or resume with the session's own model"
        )
    if recorded is None or not served:
        return options.host, options.base_url
    unnamed = backend.unnamed_server()
    key = backend.key_env if backend.key_env and os.environ.get(backend.key_env) else None
    if asked is None and key and unnamed != recorded and not options.switch_server:
        # Someone else's database names a server this run would not otherwise talk to, and the key
        # of this environment would go with its prompts: only when the person names it.
        raise UserError(
            f"session {record.id} was recorded with the server {recorded}, not the {unnamed} this run would use; "
            f"${key} would be sent there: add {flag} {recorded} to resume there, or --switch-server with "
            f"{flag} to name another"
        )
    if asked is not None and backend.recorded_server(asked) != recorded:
        if not options.switch_server:
            raise UserError(
                f"session {record.id} was recorded with the server {recorded}; {flag} {asked} would send its "
                f"prompts elsewhere: add --switch-server to do that, or drop {flag}"
            )
        recorded = asked
    given[backend.server_option or ""] = recorded
    return given["host"], given["base_url"]


def make_provider_factory(
    store: SessionStore, host: str | None, base_url: str | None
) -> Callable[[str, str | None], ModelProvider]:
    """Providers for the session's model and for a model changed mid-session; a change may also
    name another server (`server`: the ollama host or the OpenAI base URL, by the spec's kind)."""

    def factory(text: str, server: str | None = None) -> ModelProvider:
        spec = parse_spec(text)
        given = {"host": host, "base_url": base_url}
        if server and spec.backend.server_option:
            given[spec.backend.server_option] = server
        return provider_for(spec, given["host"], given["base_url"], lambda sid: store.replies(_session_number(sid)))

    return factory


def _session_number(text: str) -> int:
    try:
        return session_number(text)
    except UserError as exc:
        raise UserError(f"replay needs a session number, e.g. replay:12: {exc}") from None


async def open_session(
    options: SessionOptions,
    control: Controller,
    bus: EventBus | None = None,
    settings: Settings | None = None,
    library: TaskLibrary | None = None,
    store: SessionStore | None = None,
    environment: JudgeEnvironment | None = None,
    progress: Progress | None = None,
) -> Session:
    """Open (or resume) a session. `environment` replaces the compiler pool and GPU worker that would
    be opened from the options (tests pass one with a fake GPU runner). `progress` hears the lines
    worth showing while the session opens, before its events flow (what a cluster's start waits for)."""
    settings = settings or Settings()
    if options.counters is not None:
        settings = dataclasses.replace(
            settings,
            counters=dataclasses.replace(settings.counters, mode=options.counters),  # type: ignore[arg-type]  # the CLI's choices are the mode literals
        )
    if options.torch_compile:
        settings = dataclasses.replace(settings, profile=dataclasses.replace(settings.profile, torch_compile=True))
    bus = bus or EventBus()
    store = store or SessionStore(options.db)
    library = library or TaskLibrary()
    loop_settings = options.loop
    host, base_url = options.host, options.base_url
    if options.resume is not None:
        record = store.session(options.resume)
        task = library.get(record.task_folder if Path(record.task_folder).is_dir() else record.task)
        if task.fingerprint != record.task_fingerprint:
            raise UserError(f"task {task.name!r} changed since session {record.id} was recorded; start a new session")
        model = options.model or record.model
        host, base_url = resume_server(record, model, options)
        loop_settings = dataclasses.replace(record.settings, **options.overrides)  # type: ignore[arg-type]  # LoopSettings fields by name
        done = len(store.rounds(record.id)) if options.overrides else 0  # (read only when it can matter)
        if options.overrides and done >= loop_settings.rounds:
            # It would end at once with the new settings (more candidates, say) saved for nothing. (A
            # resume without new settings shows the session as recorded: the TUI's way to look at one.)
            raise UserError(
                f"session {record.id} has done its {done} round(s): nothing to resume with new settings; add "
                f"--rounds {done + 1} (or more) to go on"
            )
        store.claim(record.id)
        session_id = record.id
    else:
        if not options.task or not options.model:
            raise UserError("a new session needs a task and --model (or --resume ID)")
        task = library.get(options.task)
        model = options.model
    loop_settings.validate()
    factory = make_provider_factory(store, host, base_url)
    provider = factory(model, None)
    if options.resume is None:
        # A new session is recorded only for a model that can answer (engine/llm/preflight.py).
        try:
            await check_model(provider)
        except BaseException:
            await provider.close()
            raise
    env = environment or await open_environment(
        settings, options.arch, options.compile_only, options.gpu, options.cluster, progress=progress
    )
    try:
        device = device_label(env.device, env.arch)
        judge = env.judge(task, settings)
        if options.resume is None:
            # A baseline that does not compile is the task author's to fix, one line naming the file and
            # line; no session is recorded for it (compiled once: the loop reuses it).
            await judge.baseline()
            session_id = store.create_session(
                task.name, str(task.folder), task.fingerprint, model, loop_settings, device, env.arch
            )
        else:
            store.update_session(session_id, model=model, device=device, arch=env.arch)
            store.set_settings(session_id, loop_settings)
        # What this session's figures depend on, so a row of a table can be reproduced from it.
        store.update_session(session_id, server=server_of(provider), environment_json=json.dumps(env.facts()))
        nvrtc = env.device.nvrtc_version if env.device else nvrtc_library.version_text()
        builder = PromptBuilder(
            task,
            env.arch,
            nvrtc,
            env.device,
            env.peaks,
            loop_settings.feedback_chars,
            gpu_count=getattr(env.gpu, "size", 1),
        )
        if not control.stop_when_paused:
            # A person is watching: the session's own setting may ask them to review each winner.
            # Headless runs (nobody to ask) always accept automatically, also when resuming a session
            # that was recorded in the TUI with reviews on.
            control.auto_accept = loop_settings.auto_accept and control.auto_accept
        loop = FsrLoop(session_id, judge, provider, store, builder, loop_settings, control, bus, factory)
    except BaseException:
        await env.close()
        raise
    return Session(session_id, task, loop, bus, control, store, env, provider, options.resume is not None)
