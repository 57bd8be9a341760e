"""The Feature Search and Reinforcement loop (docs/architecture.md, "The loop").

A round asks the model for N candidates at once; each is parsed, compiled and validated as soon as
its reply arrives. If none is correct, a repair request carries every failure back (at most R
repairs; they do not count as rounds). The correct ones are timed with the baseline and the current
best, interleaved; the fastest becomes the new best only if it beats the best by more than the
noise, and, unless auto-accept is on, only once the person accepts it. The next round's prompt
carries the best kernel, its figures and the history. Every step is recorded as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.core.concurrency import gather_or_cancel
from cuda_llm.engine.core.errors import FormatError, UserError, headline
from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.core.status import Stage
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.control import Controller, Decision, Edit
from cuda_llm.engine.fsr.prompt import PromptBuilder, Rejection
from cuda_llm.engine.fsr.repeats import JudgedPrograms, history_note, repeat_of
from cuda_llm.engine.gpu.client import GpusLost
from cuda_llm.engine.gpu.protocol import Timing, device_label, is_compile_only
from cuda_llm.engine.judge.judge import Judge
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Candidate, Compiled, Judgement, LibraryResult, RoundTiming
from cuda_llm.engine.judge.metrics import figures, share_text, speedup_text
from cuda_llm.engine.llm.base import Message, ModelError, ModelProvider, RequestKey
from cuda_llm.engine.llm.retry import complete_with_retries
from cuda_llm.engine.llm.spec import server_of, spec_of
from cuda_llm.engine.store.sessions import CandidateRecord, SessionStore, StoreError
from cuda_llm.engine.task.plan import parse_plan


def candidate_label(key: RequestKey) -> str:
    """r2-3: round 2, third candidate; r2-fix1-3: the same slot of the round's first repair."""
    fix = f"-fix{key.attempt}" if key.attempt else ""
    return f"r{key.round}{fix}-{key.slot + 1}"


def _edit_number(label: str) -> int | None:
    """3 for r2-edit3, a person's third edit of the session; None for any other label."""
    _, sep, number = label.partition("-edit")
    return int(number) if sep and number.isdigit() else None


def torch_compile_notice(sid: int, result: LibraryResult) -> ev.Notice:
    """torch.compile's figure as the session says it once, or the one line why there is none."""
    t, fig = result.timing, result.figures
    if t is None:
        return ev.Notice(sid, f"torch.compile: no figure, going on with eager alone: {result.note}", "warning")
    over = f", {fig.speedup:.2f}x {fig.baseline_name}" if fig is not None and fig.speedup else ""
    return ev.Notice(sid, f"torch.compile: {t.median_us:.1f} us on {result.device}{over}")


class SessionPausedError(Exception):
    """The loop cannot go on until someone fixes something (server down, disk full)."""


@dataclass
class LoopState:
    """What the loop carries from round to round (and rebuilds on --resume)."""

    best: Judgement
    best_compiled: Compiled | None
    round: int = 0  # last finished round
    no_gain: int = 0
    tokens: int = 0
    history: list[str] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    last_failures: list[Judgement] = field(default_factory=list)
    edits: int = 0
    # The last round's winner the person had not decided on when the session stopped: a resume asks
    # again before anything else (recorded in that round's summary as "pending").
    pending: str | None = None


@dataclass(frozen=True)
class SessionResult:
    session_id: int
    reason: str
    best: Judgement | None
    rounds: int
    tokens: int
    status: str  # finished | stopped | paused | failed


class FsrLoop:
    def __init__(
        self,
        session_id: int,
        judge: Judge,
        provider: ModelProvider,
        store: SessionStore,
        builder: PromptBuilder,
        settings: LoopSettings,
        control: Controller,
        bus: ev.EventBus,
        provider_factory: Callable[[str, str | None], ModelProvider] | None = None,
    ) -> None:
        self.sid = session_id
        self.judge = judge
        self.provider = provider
        self.store = store
        self.builder = builder
        self.settings = settings
        self.control = control
        self.bus = bus
        self.provider_factory = provider_factory
        self._compiled: dict[str, Compiled] = {}
        # What the session has judged, so that a reply repeating a program is not judged again.
        self._programs = JudgedPrograms()
        self._started = time.monotonic()
        self._records: dict[str, CandidateRecord] = {r.label: r for r in store.candidates(session_id)}
        # Why hardware counters cannot be read here, once a run has said so: none are tried again.
        self._counters_unavailable: str | None = None
        # Timing and reading counters take turns on the GPU: ncu replaying a kernel beside a timed
        # sample would be in its figure (a counters run on demand, from the TUI, waits for a round's
        # timing to end, and the next timing waits for it).
        self._gpu_turn = asyncio.Lock()

    def emit(self, event: ev.Event) -> None:
        self.bus.emit(event)

    # ---- the session -------------------------------------------------------------------------------
    async def run(self, resumed: bool = False) -> SessionResult:
        task = self.judge.task
        device = device_label(self.judge.device, self.judge.arch)
        started = ev.SessionStarted(
            self.sid,
            task.name,
            self.provider.spec,
            device,
            self.settings,
            resumed,
            is_compile_only(self.judge.device),
            server_of(self.provider),
        )
        self.emit(started)
        # A cluster's GPUs lost, gone or back are said as it happens (engine/cluster/cluster_pool.py).
        listen = getattr(self.judge.gpu, "listen", None)
        if listen is not None:
            listen(lambda line, warning: self.emit(ev.Notice(self.sid, line, "warning" if warning else "info")))
        try:
            state = await self._initial_state()
            reason = await self._rounds(state)
            status = "stopped" if reason == "stopped by the user" else "finished"
        except (SessionPausedError, StoreError, GpusLost) as exc:
            # A store error here is a write that failed (disk full, read-only, locked): as with a
            # server that is down, or GPUs out of reach, nothing recorded is lost and the session
            # can be resumed.
            with contextlib.suppress(StoreError):  # the error that ended it matters more
                self.store.update_session(self.sid, status="paused", status_message=str(exc))
            self.emit(ev.SessionPaused(self.sid, str(exc)))
            return SessionResult(self.sid, str(exc), None, 0, 0, "paused")
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, UserError) else str(exc)
            with contextlib.suppress(StoreError):  # the error that ended it matters more
                self.store.update_session(self.sid, status="failed", status_message=message)
            self.emit(ev.Failed(self.sid, message))
            raise
        undecided = f"; {state.pending} awaits a decision, which a resume asks for first" if state.pending else ""
        self.store.update_session(
            self.sid,
            status=status,
            status_message=reason + undecided,  # `cuda-llm sessions --json` and the report say it
            best_label=state.best.label,
            tokens_used=state.tokens,
        )
        self.emit(ev.SessionFinished(self.sid, reason, state.best, state.round, state.tokens))
        return SessionResult(self.sid, reason, state.best, state.round, state.tokens, status)

    async def _initial_state(self) -> LoopState:
        """The baseline judged and timed (the first best), then whatever the store says happened."""
        if self.judge.settings.profile.torch_compile and not self.judge.compile_only:
            # First, so the baseline's and every candidate's figures carry 'x torch.compile' too.
            self.emit(torch_compile_notice(self.sid, await self.judge.torch_compile()))
        base_j = await self.judge.baseline_judgement()
        if base_j.status not in ("correct", "compiled"):
            raise UserError(f"the baseline of task {self.judge.task.name!r} fails its own validation: {base_j.message}")
        self._record(base_j, "profile" if base_j.timing else "validate", RequestKey(0, 0, 0))
        self._programs.remember(base_j)
        state = LoopState(best=base_j, best_compiled=await self.judge.baseline())
        if not self.judge.compile_only:
            library = await self.judge.library()
            self.builder.library = library
            self.emit(ev.LibraryTimed(self.sid, library))
        return await self._restore(state)

    async def _restore(self, state: LoopState) -> LoopState:
        """Rebuild the loop's state from a recorded session (a no-op for a new one)."""
        rounds = self.store.rounds(self.sid)
        session = self.store.session(self.sid)
        state.tokens = session.tokens_used
        for summary in rounds:
            state.round = summary["round"]
            state.history.append(summary["history"])
            state.no_gain = summary["no_gain"]
        # The model's candidates in the order judged, so that a repeat is known again as one.
        for rec in sorted(self._records.values(), key=lambda r: (r.round, r.attempt, r.slot)):
            if rec.judgement is not None and rec.judgement.candidate and rec.judgement.candidate.origin == "model":
                self._programs.remember(rec.judgement)
        for rec in self._records.values():
            if (edit := _edit_number(rec.label)) is not None:
                state.edits = max(state.edits, edit)  # edits are numbered across the session
            if rec.decision == "rejected":
                state.rejections.append(Rejection(rec.label, rec.decision_reason or ""))
        if session.best_label and session.best_label != BASELINE_LABEL:
            best_rec = self._records.get(session.best_label)
            if best_rec and best_rec.judgement and best_rec.judgement.candidate:
                compiled = await self.judge.compile(best_rec.judgement.candidate)
                if isinstance(compiled, Compiled):
                    best = best_rec.judgement
                    if not self.judge.compile_only:
                        timing = await self.judge.profile([(compiled, best)])
                        best = timing.judgements[0]
                    state.best, state.best_compiled = best, compiled
        if rounds:
            last = [r for r in self._records.values() if r.round == state.round and r.judgement]
            state.last_failures = [r.judgement for r in last if r.judgement is not None and r.judgement.failed]
            pending = self._records.get(rounds[-1].get("pending") or "")
            if pending is not None and pending.decision is None and pending.judgement is not None:
                state.pending = pending.label
        if self._records or rounds:
            self._emit_history(state, rounds)
        return state

    def _emit_history(self, state: LoopState, rounds: list[dict]) -> None:
        records = [r for r in self._records.values() if r.label != BASELINE_LABEL]
        keys = sorted({(r.round, r.attempt) for r in records})
        prompts = tuple((r, a, tuple(p)) for r, a in keys if (p := self.store.prompt(self.sid, r, a)) is not None)
        restored = tuple(
            ev.RestoredCandidate(
                r.label, r.round, r.attempt, r.slot, r.reply, r.judgement, r.decision, r.decision_reason or ""
            )
            for r in records
        )
        self.emit(ev.HistoryRestored(self.sid, restored, tuple(rounds), prompts, state.best, state.tokens))

    def _baseline_notice(self, state: LoopState) -> None:
        """Say so when the baseline already meets the roofline target: the session asks the model anyway."""
        target = self.settings.target_roofline
        fig = state.best.figures
        if state.best.label == BASELINE_LABEL and target and fig and fig.roofline_share >= target:
            self.emit(
                ev.Notice(
                    self.sid,
                    f"the baseline already reaches {share_text(fig.roofline_pct)} (target {target:.0%}); "
                    "the target is judged on the model's candidates, so the model is asked",
                )
            )

    async def _rounds(self, state: LoopState) -> str:
        self._baseline_notice(state)
        if state.pending is not None and not self.judge.compile_only:
            await self._ask_again(state)
            if self.control.stopped:
                return "stopped by the user"
        while True:
            self._apply_pending()
            if state.round >= self.settings.rounds:
                return f"{self.settings.rounds} rounds done"
            stop = self._stop_rule(state)
            if stop:
                return stop
            await self._checkpoint()
            if self.control.stopped:
                return "stopped by the user"
            await self._round(state, state.round + 1)
            if self.control.stopped:
                return "stopped by the user"

    def _stop_rule(self, state: LoopState) -> str | None:
        s = self.settings
        fig = state.best.figures
        # The target is judged on the model's candidates only: a baseline already near the roofline
        # (PyTorch eager on an elementwise module reaches 90%) must not end a session that never asked
        # the model (the line at the start says so: _baseline_notice).
        model_best = state.best.label != BASELINE_LABEL
        if s.target_roofline and fig and model_best and fig.roofline_share >= s.target_roofline and not fig.suspect:
            return (
                f"the best candidate, {state.best.label}, reached {share_text(fig.roofline_pct)} "
                f"(target {s.target_roofline:.0%})"
            )
        if s.patience and state.no_gain >= s.patience:
            return f"{state.no_gain} rounds without a new best"
        if s.token_budget and state.tokens >= s.token_budget:
            return f"token budget spent ({state.tokens} of {s.token_budget})"
        if s.time_budget_s and time.monotonic() - self._started >= s.time_budget_s:
            return f"time budget spent ({s.time_budget_s:.0f} s)"
        return None

    def _apply_pending(self) -> None:
        changes = self.control.take_pending()
        if not changes:
            return
        updates: dict[str, Any] = {k: v for k, v in changes.items() if k in ("candidates", "rounds")}
        if updates:
            self.settings = dataclasses.replace(self.settings, **updates)
            self.store.set_settings(self.sid, self.settings)
        if "model" in changes and self.provider_factory is not None:
            server = changes.get("server")
            self.provider = self.provider_factory(str(changes["model"]), str(server) if server else None)
            self.store.update_session(self.sid, model=self.provider.spec, server=server_of(self.provider))
        self.emit(ev.Notice(self.sid, "from now on: " + ", ".join(f"{k} = {v}" for k, v in changes.items())))

    async def _checkpoint(self) -> None:
        if self.control.paused and not self.control.stopped:
            if self.control.stop_when_paused:
                raise SessionPausedError("paused by the user")
            self.store.update_session(self.sid, status="paused", status_message="paused by the user")
            self.emit(ev.SessionPaused(self.sid, "paused by the user"))
            await self.control.wait_running()
            self._apply_pending()
            self.store.update_session(self.sid, status="running", status_message="")
            self.emit(ev.SessionResumed(self.sid))

    # ---- one round -------------------------------------------------------------------------------
    async def _round(self, state: LoopState, r: int) -> None:
        if r == 1 and state.best.label == BASELINE_LABEL:
            base = self.builder.first(state.rejections)
        else:
            base = self.builder.optimize(r, state.best, state.history, state.rejections, state.last_failures)
        judged: list[Judgement] = []
        for attempt in range(self.settings.repairs + 1):
            recorded = self.store.prompt(self.sid, r, attempt)
            if recorded is not None:
                prompt = recorded  # resuming: the model already saw this prompt
            elif attempt == 0:
                prompt = base
            else:
                prompt = self.builder.repair(base, [j for j in judged if j.failed])
            self.store.record_prompt(self.sid, r, attempt, prompt)
            self.emit(
                ev.RoundStarted(self.sid, r, attempt, tuple(prompt), self.settings.candidates, self.settings.rounds)
            )
            judged = await self._request_batch(state, r, attempt, prompt)
            if self.control.stopped and len(judged) < self.settings.candidates:
                return  # requests were cancelled: the round stays open, and --resume asks again
            if any(j.is_correct or j.status == "compiled" for j in judged) or self.control.stopped:
                break
            if self._stop_rule(state):
                break
        await self._conclude_round(state, r, judged)

    async def _request_batch(self, state: LoopState, r: int, attempt: int, prompt: list[Message]) -> list[Judgement]:
        keys = [RequestKey(r, attempt, slot) for slot in range(self.settings.candidates)]
        while True:
            results = await gather_or_cancel(self._one(state, key, prompt) for key in keys)
            judged = [j for j in results if isinstance(j, Judgement)]
            errors = [e for e in results if isinstance(e, ModelError)]
            if judged or not errors or self.control.stopped:
                return judged
            # Every request failed: the server is the problem, not the candidates. Pause.
            if self.control.stop_when_paused:
                raise SessionPausedError(str(errors[0]))
            self.store.update_session(self.sid, status="paused", status_message=str(errors[0]))
            self.emit(ev.SessionPaused(self.sid, str(errors[0])))
            self.control.pause()
            await self.control.wait_running()
            if self.control.stopped:
                return []
            # A model or server changed while paused (the cure for a fault like an unknown model)
            # applies to this retry, not only to the next round.
            self._apply_pending()
            self.emit(ev.SessionResumed(self.sid))

    async def _one(self, state: LoopState, key: RequestKey, prompt: list[Message]) -> Judgement | ModelError | None:
        label = candidate_label(key)
        rec = self._records.get(label)
        if rec is not None and rec.judgement is not None:
            return await self._reuse(rec)
        if rec is not None and rec.reply is not None:
            reply = rec.reply  # received before the interruption, never judged: judge it now
            completion = rec.completion
        else:
            if self.control.stopped:
                return None
            options = self.settings.generate
            if options.seed is not None:
                options = dataclasses.replace(
                    options, seed=options.seed + 7919 * key.round + 104729 * key.attempt + key.slot
                )
            request = asyncio.ensure_future(
                complete_with_retries(
                    self.provider,
                    prompt,
                    options,
                    key,
                    policy=self.settings.retry,
                    on_token=lambda text: self.emit(ev.TokensStreamed(self.sid, label, text)),
                    on_retry=lambda n, err, delay: self.emit(ev.RequestRetrying(self.sid, label, n, delay, str(err))),
                )
            )
            try:
                await asyncio.sleep(0)  # it begins (a manual request registers itself), then the UI hears of it
            except BaseException:
                request.cancel()
                raise
            self.emit(ev.RequestStarted(self.sid, label, key.round, key.attempt, key.slot))
            try:
                # A stop cancels the request at once, retries included (nothing of it is recorded).
                completion = await self.control.unless_stopped(request)
            except ModelError as exc:
                self.emit(ev.ModelFailed(self.sid, label, exc.kind, str(exc)))
                return exc
            if completion is None:
                return None
            reply = completion.text
            try:
                self.store.record_reply(self.sid, label, key, self._origin(), reply, completion)
            except StoreError as exc:
                raise SessionPausedError(str(exc)) from None
            state.tokens += (completion.prompt_tokens or 0) + (completion.completion_tokens or 0)
            self.emit(ev.ReplyReceived(self.sid, label, completion))
        cut = completion is not None and completion.finish_reason == "length"
        judgement = await self._judge_reply(label, reply, key, cut)
        return judgement

    def _origin(self) -> str:
        return spec_of(self.provider).backend.origin()

    async def _judge_reply(self, label: str, reply: str, key: RequestKey, cut: bool = False) -> Judgement:
        # Off the event loop, as the compile's checks are: a hostile reply of many small blocks takes
        # a fifth of a second to sort out, and the UI (and Ctrl-C) must not wait for it.
        cand = await asyncio.to_thread(self.judge.parse, label, reply, self._origin())  # type: ignore[arg-type]  # _origin() gives one of the Origin literals
        if isinstance(cand, Judgement):
            if cut:
                # "No code block" or "never closed" alone hides the cause: the model wrote too much.
                cand = dataclasses.replace(
                    cand,
                    message=f"the reply reached the token limit ({self.settings.generate.max_tokens} tokens) and "
                    f"was cut off: send only the kernels, the plan and a few sentences. {cand.message}",
                )
            return self._record(cand, "parse", key)
        first = await self._programs.earlier(cand)
        if first is not None:
            return self._record(repeat_of(first, cand), "validate", key)
        judging = self._programs.judging(cand)
        try:
            judgement = await self._judge_candidate(cand, key)
        except BaseException:
            self._programs.forget(cand, judging)
            raise
        judging.set_result(judgement)
        return judgement

    async def _judge_candidate(self, cand: Candidate, key: RequestKey) -> Judgement:
        compiled = await self.judge.compile(cand)
        if isinstance(compiled, Judgement):
            return self._record(compiled, "compile", key)
        if not self.judge.compile_only:
            self.emit(ev.ValidationStarted(self.sid, cand.label, cand, compiled.compile))
        judgement = await self.judge.validate(compiled)
        self._compiled[cand.label] = compiled
        return self._record(judgement, "validate", key)

    def _record(self, j: Judgement, stage: Stage, key: RequestKey) -> Judgement:
        try:
            self.store.record_judgement(self.sid, j, key, origin=j.candidate.origin if j.candidate else "model")
        except StoreError as exc:
            raise SessionPausedError(str(exc)) from None
        self.emit(ev.CandidateJudged(self.sid, stage, j))
        return j

    async def _reuse(self, rec: CandidateRecord) -> Judgement | None:
        """A candidate judged before an interruption: keep its verdict; recompile the correct ones
        (cubins are not stored) so they can be timed."""
        j = rec.judgement
        assert j is not None
        if j.is_correct and j.candidate is not None and j.repeat_of is None:  # a repeat is never timed
            compiled = await self.judge.compile(j.candidate)
            if isinstance(compiled, Compiled):
                self._compiled[j.label] = compiled
        self.emit(ev.CandidateJudged(self.sid, "validate", j))
        return j

    # ---- profiling and selection ------------------------------------------------------------
    async def _conclude_round(self, state: LoopState, r: int, judged: list[Judgement]) -> None:
        correct = [j for j in judged if j.is_correct and j.label in self._compiled]
        state.last_failures = [j for j in judged if j.failed]
        improved = False
        contenders: list[Judgement] = []
        if correct and not self.judge.compile_only:
            timing = await self._time_against_best(state, [(self._compiled[j.label], j) for j in correct])
            by_label = {j.label: j for j in timing.judgements}
            for j in timing.judgements:
                self._record(j, "profile", RequestKey(r, 0, 0))
                self._programs.settle(j)
            self.emit(
                ev.RoundProfiled(
                    self.sid, r, timing, state.best.label, state.best.timing.median_us if state.best.timing else None
                )
            )
            # Ranked by speedup over the baseline timed on the same GPU: with several GPUs the
            # medians of different GPUs are not compared directly.
            contenders = [
                j
                for j in (by_label.get(c.label) for c in correct)
                if j is not None and j.status == "correct" and j.timing is not None and j.figures is not None
            ]
            contenders.sort(key=lambda j: -(j.figures.speedup or 0.0))  # type: ignore[union-attr]  # contenders are timed: figures set
            for winner in contenders[:1]:
                if self._beats(winner, self._best_timing(state, timing, winner.label)):
                    improved = await self._decide(state, r, winner)
        await self._process_edits(state, r)
        await self._read_counters(state, r, contenders)
        n_correct = sum(j.is_correct for j in judged)
        state.no_gain = 0 if improved else state.no_gain + 1
        best_t = state.best.timing
        line = (
            f"round {r}: {n_correct} of {len(judged)} candidates correct; best {state.best.label}"
            + (f" {best_t.median_us:.1f} us" if best_t else "")
            + (f" ({speed})" if (speed := speedup_text(state.best.figures)) else "")
            + (" (new)" if improved else "")
        )
        repeated = [(j.label, j.repeat_of) for j in judged if j.repeat_of is not None]
        if repeated:
            line += f"; {history_note(repeated)}, not judged again"
        state.history.append(line)
        state.round = r
        self._record_round(state, improved)
        self.store.update_session(self.sid, best_label=state.best.label, tokens_used=state.tokens)
        fig = state.best.figures
        self.emit(
            ev.RoundFinished(
                self.sid,
                r,
                improved,
                state.best.label,
                best_t.median_us if best_t else None,
                fig.speedup if fig else None,
                fig.roofline_share if fig else None,
                state.tokens,
                best_physical_share=fig.physical_share if fig else None,
                best_speedup_text=speedup_text(fig),
            )
        )

    async def _read_counters(self, state: LoopState, r: int, contenders: list[Judgement]) -> None:
        """Hardware counters (engine/counters) of the best, whose "what limits it" goes into the next
        prompt, and in mode "all" of the round's other correct candidates too; read after timing, in a
        process of their own. The first run that cannot read them says why in one line, and the
        session reads no more."""
        mode = self.judge.settings.counters.mode
        if mode == "off" or self.judge.compile_only or self._counters_unavailable is not None:
            return
        wanted = [state.best] if state.best.counters is None and state.best_compiled is not None else []
        if mode == "all":
            wanted += [
                j
                for j in contenders
                if j.counters is None and j.label != state.best.label and j.label in self._compiled
            ]
        for j in wanted:
            is_best = j.label == state.best.label
            compiled = state.best_compiled if is_best else self._compiled[j.label]
            assert compiled is not None
            read = await self._counters_of(j, compiled, r, is_best)
            if is_best:
                state.best = read
            if read.counters is not None and read.counters.unavailable is not None:
                self._counters_unavailable = read.counters.unavailable
                return

    async def _counters_of(self, j: Judgement, compiled: Compiled, r: int, is_best: bool) -> Judgement:
        """Read, record and announce one candidate's counters; the judgement with them."""
        async with self._gpu_turn:
            read = dataclasses.replace(j, counters=await self.judge.read_counters(compiled))
        try:
            origin = read.candidate.origin if read.candidate else "model"
            self.store.record_judgement(self.sid, read, RequestKey(r, 0, 0), origin=origin)
        except StoreError as exc:
            raise SessionPausedError(str(exc)) from None
        self.emit(ev.CountersRead(self.sid, r, read, is_best))
        return read

    async def read_counters_of(self, label: str) -> Judgement | None:
        """A person's request (the TUI's key): this correct candidate's counters now, whatever the
        setting, once any timing in progress has ended. None when it is not a correct candidate of
        this session; a judgement whose counters say why when they cannot be read."""
        from cuda_llm.engine.counters.model import unavailable

        rec = next((c for c in self.store.candidates(self.sid) if c.label == label), None)
        j = rec.judgement if rec is not None else None
        if j is None or not j.is_correct or j.candidate is None:
            return None
        compiled = self._compiled.get(label)
        if compiled is None and label == BASELINE_LABEL:
            compiled = await self.judge.baseline()
        if compiled is None:
            built = await self.judge.compile(j.candidate)
            if isinstance(built, Judgement):
                why = unavailable(f"it no longer compiles here: {built.message}")
                return dataclasses.replace(j, counters=why)
            compiled = self._compiled[label] = built
        best = self.store.session(self.sid).best_label
        return await self._counters_of(j, compiled, rec.round if rec is not None else 0, label == best)

    async def _time_against_best(self, state: LoopState, entries: list[tuple[Compiled, Judgement]]) -> RoundTiming:
        """Time programs with the baseline and the current best (on every GPU used); refresh the
        best's own figures from this session."""
        anchor = None
        if state.best.label != BASELINE_LABEL and state.best_compiled is not None:
            anchor = (state.best_compiled, state.best)
        async with self._gpu_turn:
            timing = await self.judge.profile(entries, anchor)
        if anchor is None and timing.baseline is not None:
            fig = (
                figures(
                    self.judge.task,
                    timing.baseline,
                    self.judge.peaks,
                    timing.baseline,
                    self.judge.settings.profile.suspect_physical_share,
                )
                if self.judge.peaks
                else None
            )
            state.best = dataclasses.replace(state.best, timing=timing.baseline, figures=fig or state.best.figures)
        elif timing.anchor is not None and timing.anchor.timing is not None:
            state.best = timing.anchor
        for note in timing.notes:
            self.emit(ev.Notice(self.sid, note, "warning"))
        return timing

    @staticmethod
    def _best_timing(state: LoopState, timing: RoundTiming, label: str) -> Timing | None:
        """The best as timed on the same GPU as `label` (the baseline, while it is the best)."""
        if state.best.label == BASELINE_LABEL:
            return timing.baseline
        return timing.anchors.get(label, state.best.timing)

    def _beats(self, winner: Judgement, best: Timing | None) -> bool:
        wt = winner.timing
        if wt is None:
            return False
        if best is None:
            return True
        noise = wt.rel_iqr + best.rel_iqr
        return wt.median_us < best.median_us * (1 - max(self.settings.min_gain, noise))

    async def _decide(self, state: LoopState, r: int, winner: Judgement) -> bool:
        """Auto-accept, or wait for the person. Returns whether the best changed."""
        if self.control.auto_accept:
            self._accept(state, r, winner, "auto-accepted")
            return True
        self.emit(ev.AwaitingDecision(self.sid, r, winner, state.best.timing.median_us if state.best.timing else None))
        while True:
            decision = await self.control.wait_decision(winner.label)
            if decision is None:  # stopped, or auto-accept switched on meanwhile
                if self.control.auto_accept and not self.control.stopped:
                    self._accept(state, r, winner, "auto-accepted")
                    return True
                state.pending = winner.label  # stopped: undecided, so a resume asks again
                return False
            if isinstance(decision, Edit):
                edited = await self._judge_edit(state, r, decision)
                if edited is not None and edited.is_correct:
                    winner = edited
                    self.emit(
                        ev.AwaitingDecision(
                            self.sid, r, winner, state.best.timing.median_us if state.best.timing else None
                        )
                    )
                continue
            if decision.kind == "accept":
                self._accept(state, r, winner, "accepted")
                return True
            self._reject(state, decision)
            return False

    async def _ask_again(self, state: LoopState) -> None:
        """The winner left undecided when the session stopped, before the next round: timed again
        beside the best (a resume may run on another GPU, or the same one at other clocks) and, if it
        still beats it, offered again (or auto-accepted); its round's summary then says what became
        of it, so a later resume neither asks twice nor counts the round as one without gain."""
        label, state.pending = state.pending, None
        rec = self._records.get(label or "")
        if rec is None or rec.judgement is None or rec.judgement.candidate is None:
            return
        compiled = await self.judge.compile(rec.judgement.candidate)
        improved = False
        if isinstance(compiled, Compiled):
            self._compiled[rec.label] = compiled
            timing = await self._time_against_best(state, [(compiled, rec.judgement)])
            again = next((j for j in timing.judgements if j.label == rec.label), None)
            if again is not None and again.is_correct and again.timing is not None:
                self._record(again, "profile", RequestKey(rec.round, 0, 0))
            if again is not None and self._beats(again, self._best_timing(state, timing, rec.label)):
                improved = await self._decide(state, state.round, again)
            else:
                self.emit(
                    ev.Notice(
                        self.sid,
                        f"{rec.label}, undecided when the session stopped, no longer beats the best "
                        f"({state.best.label}) timed again beside it: not offered again",
                    )
                )
        if improved:
            state.no_gain = 0
            state.history[-1] += f"; {rec.label} accepted on resume"
            self._record_round(state, improved)
        else:  # the round as recorded, its figures those of its own time; only what is pending changes
            last = self.store.rounds(self.sid)[-1]  # this round: `pending` comes from the last one only
            self.store.record_round(self.sid, state.round, last | {"pending": state.pending})

    def _record_round(self, state: LoopState, improved: bool) -> None:
        """The summary of the last finished round (state.round), as a resume reads it back."""
        best_t = state.best.timing
        self.store.record_round(
            self.sid,
            state.round,
            {
                "round": state.round,
                "history": state.history[-1],
                "no_gain": state.no_gain,
                "best": state.best.label,
                "improved": improved,
                "best_median_us": best_t.median_us if best_t else None,
                "pending": state.pending,
            },
        )

    def _accept(self, state: LoopState, r: int, winner: Judgement, how: str) -> None:
        previous = state.best
        state.best = winner
        state.best_compiled = self._compiled.get(winner.label, state.best_compiled)
        self.store.record_decision(self.sid, winner.label, how)
        self.store.update_session(self.sid, best_label=winner.label)
        self.emit(ev.DecisionMade(self.sid, winner.label, how))
        self.emit(
            ev.BestImproved(self.sid, r, winner, previous.label, previous.timing.median_us if previous.timing else None)
        )

    def _reject(self, state: LoopState, decision: Decision) -> None:
        state.rejections.append(Rejection(decision.label, decision.reason))
        self.store.record_decision(self.sid, decision.label, "rejected", decision.reason)
        self.emit(ev.DecisionMade(self.sid, decision.label, "rejected", decision.reason))

    async def _process_edits(self, state: LoopState, r: int) -> None:
        while (edit := self.control.next_edit()) is not None:
            edited = await self._judge_edit(state, r, edit)
            if edited is None or not edited.is_correct or edited.timing is None:
                continue
            if self.control.auto_accept and self._beats(edited, state.best.timing):
                self._accept(state, r, edited, "accepted")

    async def _judge_edit(self, state: LoopState, r: int, edit: Edit) -> Judgement | None:
        """Run a person's kernel through the three checks and time it against the best."""
        state.edits += 1
        label = f"r{r}-edit{state.edits}"
        key = RequestKey(r, 0, 1000 + state.edits)
        try:
            plan = parse_plan(edit.plan_json)
        except FormatError as exc:
            return self._record(Judgement(label, "format_error", headline(str(exc)), detail=str(exc)), "parse", key)
        explanation = f"edited from {edit.based_on}" if edit.based_on else ""
        cand = Candidate(label, edit.source, plan, explanation, "user", based_on=edit.based_on)
        j = await self._judge_candidate(cand, key)
        if j.status != "correct" or self.judge.compile_only:
            return j
        timing = await self._time_against_best(state, [(self._compiled[label], j)])
        for t in timing.judgements:
            if t.label == label:
                j = self._record(t, "profile", key)
        return j
