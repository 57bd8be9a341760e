"""The GpuPool interface (engine/gpu/gpu_pool.py) over GPU actors of a Ray cluster.

Validations go to whichever GPU is free; a round's timing is split across the GPUs by the Judge, each
group timed with its own baseline on one GPU, as on one machine. What is new is that GPUs come and
go:
- a job whose GPU is lost (its node died, its actor restarted, the answer never came) runs again on
  another GPU; the loop records a candidate only once its judgement is back, so none is judged twice
  into the record and none is lost;
- a lost GPU is asked again every few seconds and rejoins once its actor answers (Ray restarts an
  actor whose process died, on its node or wherever a GPU frees up);
- with every GPU out of reach for ClusterSettings.lost_grace_s, or the cluster itself gone, the job
  raises GpusLost and the session pauses, resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from cuda_llm.engine.cluster.bundle import ShippedTask, pack_task
from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
from cuda_llm.engine.cluster.connection import connected, head_answers, ray_result
from cuda_llm.engine.cluster.fleet import Member, give_back, ray_error_line
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.client import GpusLost, GpuUnavailable, GpuWorker, ProfileFailure
from cuda_llm.engine.gpu.protocol import DeviceInfo, Fault, Peaks, ProfileReport, ProgramRef, ValidationReport
from cuda_llm.engine.task.model import Task


class _Lost(Exception):
    """A job did not come back from its GPU; it runs again elsewhere."""

    def __init__(self, reason: str, for_good: bool) -> None:
        super().__init__(reason)
        self.for_good = for_good


class _ShipAgain(Exception):
    """The task's files were lost from the object store (with the node that held them): put them
    there again and send the job again, to the same GPU."""


class _JobFailed(Exception):
    """The actor raised while serving the job, for a reason that is not its GPU's (a fault in the
    job itself): the job fails, the GPU stays."""


class TaskShipper:
    """Each task folder into the object store once (per content), for every GPU to fetch."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._shipped: dict[tuple[str, str], ShippedTask] = {}
        self._lock = asyncio.Lock()

    async def ship(self, task: Task) -> ShippedTask:
        import ray

        key = (str(task.folder), task.fingerprint)
        async with self._lock:
            shipped = self._shipped.get(key)
            if shipped is None:
                bundle = await asyncio.to_thread(pack_task, task.folder, self.max_bytes)
                ref = await asyncio.to_thread(ray.put, bundle)
                shipped = ShippedTask(bundle.key, task.name, task.fingerprint, (ref,))
                self._shipped[key] = shipped
            return shipped

    def forget(self, task: Task) -> None:
        """Ship it again next time (its object was lost with the node that held it)."""
        self._shipped.pop((str(task.folder), task.fingerprint), None)

    def clear(self) -> None:
        """Let go of every object shipped, before the connection closes (ClusterConnection.close
        says why none may outlive it)."""
        self._shipped.clear()


class ClusterGpuPool:
    def __init__(
        self,
        members: Sequence[Member],
        settings: Settings,
        cluster: ClusterSettings,
        address: str,
        shipper: TaskShipper,
        owns_members: bool = True,
    ) -> None:
        """`owns_members`: close() ends the actors (False: they belong to a fleet shared by several
        pools, as in `bench --cluster`)."""
        self.members = list(members)
        self.settings = settings
        self.cluster = cluster
        self.address = address
        self.shipper = shipper
        self.owns_members = owns_members
        self.devices: list[DeviceInfo] = [m.info for m in self.members]
        self.requeued = 0  # jobs run again on another GPU after theirs was lost
        self.revived = 0  # lost GPUs that came back
        self.events: list[str] = []  # one line per GPU lost, refused or back
        self._reported = 0  # how many of them take_events() has handed out (or the listener heard)
        self._listener: Callable[[str, bool], None] | None = None
        self._budgets = GpuWorker(0, settings)  # the worker's own time limits (it spawns nothing)
        # A member is in this queue once for each job it may take now (ClusterSettings.jobs_per_gpu).
        self._idle: asyncio.Queue[Member] = asyncio.Queue()
        for _ in range(cluster.jobs_per_gpu):
            for m in self.members:
                self._idle.put_nowait(m)
        self._watchers: set[asyncio.Task[None]] = set()
        self._watched: set[Member] = set()
        self._all_lost_since: float | None = None
        self._gone: str | None = None  # the cluster itself is out of reach
        self._next = 0
        self._closed = False

    # ---- the GpuPool interface ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def device(self) -> DeviceInfo:
        return self.devices[0]

    @property
    def restarts(self) -> int:
        return self.revived

    async def start(self) -> list[DeviceInfo]:
        return self.devices  # the fleet started the actors and their workers

    def describe(self) -> str:
        nodes = len({m.ran_on.node_id for m in self.members})
        return f"{len(self.members)} x {self.devices[0].name} on {nodes} node(s) of the Ray cluster at {self.address}"

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        timeout = self._budgets.validation_budget_s(task) + self.cluster.job_slack_s
        while True:
            member = await self._acquire()
            try:
                shipped = await self._ship(task)
                return await self._call(member, "validate", (shipped, program), timeout, task)
            except _Lost as exc:
                self._lose(member, str(exc), exc.for_good)
                self.requeued += 1
            except _ShipAgain:
                continue
            except _JobFailed as exc:
                fault = Fault("crashed", "ACTOR", f"the GPU's actor failed: {exc}")
                return ValidationReport("crashed", fault.message, fault=fault, ran_on=member.ran_on)
            finally:
                if member.state == "ready":  # (also after a cancellation: the slot is not lost)
                    self._idle.put_nowait(member)

    async def profile(
        self, task: Task, programs: list[ProgramRef], worker: int = 0, library: bool = False
    ) -> ProfileReport | ProfileFailure:
        """Time on GPU `worker`, or, if it is lost, on another: the group carries its own baseline
        (and best), so its figures stay comparable wherever it runs."""
        timeout = self._budgets.profile_budget_s(len(programs) + int(library)) + self.cluster.job_slack_s
        member = self.members[worker % len(self.members)]
        while True:
            self._check_reachable()
            if member.state != "ready":
                member = await self._any_ready()
            shipped = await self._ship(task)
            try:
                return await self._call(member, "profile", (shipped, list(programs), library), timeout, task)
            except _Lost as exc:
                self._lose(member, str(exc), exc.for_good)
                self.requeued += 1
            except _ShipAgain:
                continue
            except _JobFailed as exc:
                return ProfileFailure(Fault("crashed", "ACTOR", f"the GPU's actor failed: {exc}"))

    async def _ship(self, task: Task) -> ShippedTask:
        """The task's files in the object store; GpusLost if the connection closed meanwhile (Ray,
        told to start nothing by itself, refuses the put: ClusterConnection)."""
        try:
            return await self.shipper.ship(task)
        except Exception:
            if connected():
                raise
            self._gone = self._gone or self._lost_line("the connection closed")
            raise GpusLost(self._gone) from None

    async def peaks(self, force: bool = False) -> Peaks:
        """The first GPU's ceilings (measured on every GPU, so each one's cache is warm)."""
        measured = await asyncio.gather(*(ray_result(m.handle.peaks.remote(force)) for m in self.members))
        return measured[0]

    async def worker_restarts(self) -> int:
        """How often the GPU worker processes were restarted inside their actors (crashes, hangs)."""
        if not connected():
            return 0
        counts = await asyncio.gather(
            *(ray_result(m.handle.worker_restarts.remote()) for m in self.members if m.state == "ready")
        )
        return sum(counts)

    def take_events(self) -> tuple[str, ...]:
        """The GPUs lost, gone or back since the last call that no listener heard: the Judge passes
        them on as notes."""
        new = tuple(self.events[self._reported :])
        self._reported = len(self.events)
        return new

    def listen(self, listener: Callable[[str, bool], None]) -> None:
        """Have `listener(line, warning)` told of each GPU lost, gone or back as it happens (a session
        says it then, not at the round's timing); lines from before are told at once."""
        self._listener = listener
        for line in self.take_events():
            listener(line, not line.endswith(" is back"))

    def _event(self, line: str, warning: bool = True) -> None:
        self.events.append(line)
        if self._listener is not None:
            self._reported = len(self.events)
            self._listener(line, warning)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for watcher in list(self._watchers):
            watcher.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        if self.owns_members:
            self.shipper.clear()
            if self._gone is None:
                await give_back(self.members, self.cluster.close_timeout_s)

    # ---- getting a GPU -------------------------------------------------------------------------------
    def _check_reachable(self) -> None:
        if self._closed:
            raise GpusLost(self._gone or self._lost_line("the session closed its GPUs"))
        for member in self.members:
            if member.state == "lost" and member not in self._watched:
                self._watch(member)  # lost under another pool of the fleet, or before this one began
        if self._gone is None and not connected():
            self._gone = self._lost_line("the connection closed")
        if self._gone is not None:
            raise GpusLost(self._gone)
        if all(m.state == "dead" for m in self.members):
            raise GpusLost(self._nodes_lost_line("every GPU of the session is gone"))
        if any(m.state == "ready" for m in self.members):
            self._all_lost_since = None
            return
        now = time.monotonic()
        if self._all_lost_since is None:
            self._all_lost_since = now
        elif now - self._all_lost_since > self.cluster.lost_grace_s:
            grace = self.cluster.lost_grace_s
            raise GpusLost(self._nodes_lost_line(f"no GPU of the session answered for {grace:.0f} s"))

    def _lost_line(self, what: str) -> str:
        """The cluster itself out of reach (its head, or the connection to it)."""
        last = f" (last: {self.events[-1]})" if self.events else ""
        return f"lost the Ray cluster at {self.address}: {what}{last}; the session is paused, resumable"

    def _nodes_lost_line(self, what: str) -> str:
        """No GPU of the session answers: the GPU nodes are gone while the head still answers, or the
        head itself is (a Ray client notices that only half a minute later: its port is asked now)."""
        if not head_answers(self.address):
            self._gone = self._lost_line(f"its head does not answer; {what}")
            return self._gone
        return (
            f"the GPU nodes of the Ray cluster at {self.address} are out of reach: {what} (its head still "
            "answers); the session is paused, resumable once they are back"
        )

    async def _acquire(self) -> Member:
        """A ready GPU that can take a job now, waiting for one (or for a lost one to come back)."""
        while True:
            self._check_reachable()
            try:
                member = await asyncio.wait_for(self._idle.get(), self.cluster.revive_poll_s)
            except TimeoutError:
                continue
            if member.state == "ready":
                return member

    async def _any_ready(self) -> Member:
        """A ready GPU, busy or not (its worker serves one job at a time)."""
        while True:
            self._check_reachable()
            ready = [m for m in self.members if m.state == "ready"]
            if ready:
                self._next += 1
                return ready[self._next % len(ready)]
            await asyncio.sleep(self.cluster.revive_poll_s)

    # ---- faults ---------------------------------------------------------------------------------------
    async def _call(self, member: Member, method: str, args: tuple[Any, ...], timeout_s: float, task: Task) -> Any:
        """The actor's `method` run on `args`, awaited; its faults sorted into _Lost, _ShipAgain,
        _JobFailed and GpusLost (the cluster out of reach). Sent from inside, as sending can fail too."""
        from ray.exceptions import ActorDiedError, ObjectLostError, RayActorError, RayError, RayTaskError

        try:
            return await ray_result(getattr(member.handle, method).remote(*args), timeout_s)
        except ActorDiedError as exc:
            raise _Lost(_reason(exc), for_good=True) from None
        except RayActorError as exc:  # unavailable: its node lost, or the actor restarting
            raise _Lost(_reason(exc), for_good=False) from None
        except TimeoutError:
            # Its worker enforces the job's limits on the node; an answer this late is stuck on the
            # way. A restarted actor starts clean.
            import ray

            if connected():
                with contextlib.suppress(RayError, ValueError, ConnectionError):
                    ray.kill(member.handle, no_restart=False)
            raise _Lost(f"no answer within {timeout_s:.0f} s", for_good=False) from None
        except ObjectLostError:
            self.shipper.forget(task)
            raise _ShipAgain from None
        except RayTaskError as exc:
            if isinstance(getattr(exc, "cause", None), GpuUnavailable):  # its GPU worker no longer starts
                raise _Lost(_reason(exc), for_good=True) from None
            raise _JobFailed(_reason(exc)) from None
        except ConnectionError as exc:  # a Ray client whose cluster went away
            self._gone = self._lost_line(f"the connection broke ({_reason(exc)})")
            raise GpusLost(self._gone) from None
        except Exception:
            if connected():
                raise
            self._gone = self._lost_line("the connection closed")
            raise GpusLost(self._gone) from None

    def _lose(self, member: Member, reason: str, for_good: bool) -> None:
        if member.state != "ready":
            return
        if for_good:
            self._lose_for_good(member, reason)
            return
        member.state = "lost"
        self._event(
            f"{member.ran_on.describe()} lost: {reason}; its job runs again on another GPU, and it is "
            f"asked again every {self.cluster.revive_poll_s:g} s"
        )
        self._drop_slots(member)
        self._watch(member)
        self._say_if_none_left()

    def _say_if_none_left(self) -> None:
        """Said once when the session's last GPU goes out of reach: what happens next, and when."""
        if any(m.state == "ready" for m in self.members) or all(m.state == "dead" for m in self.members):
            return
        self._event(
            f"every GPU of the session is out of reach: waiting up to {self.cluster.lost_grace_s:.0f} s for "
            "one to come back before the session pauses"
        )

    def _drop_slots(self, member: Member) -> None:
        """Take a lost GPU's places out of the queue; it gets them back when it is back."""
        keep = []
        while not self._idle.empty():
            other = self._idle.get_nowait()
            if other is not member:
                keep.append(other)
        for other in keep:
            self._idle.put_nowait(other)

    def _watch(self, member: Member) -> None:
        if self._closed or member in self._watched:
            return
        self._watched.add(member)
        watcher = asyncio.get_running_loop().create_task(self._revive(member))
        self._watchers.add(watcher)

        def done(task: asyncio.Task[None]) -> None:
            self._watchers.discard(task)
            self._watched.discard(member)

        watcher.add_done_callback(done)

    async def _revive(self, member: Member) -> None:
        """Ask a lost GPU again until its actor answers; back in the pool if it is still the same
        kind of GPU (the session's cubins are compiled for that architecture)."""
        from ray.exceptions import ActorDiedError, RayError

        while not self._closed:
            await asyncio.sleep(self.cluster.revive_poll_s)
            try:
                answer = await ray_result(member.handle.start.remote(), self.cluster.start_timeout_s)
            except ActorDiedError:
                member.state = "dead"
                return
            except ConnectionError as exc:
                self._gone = self._lost_line(f"the connection broke ({_reason(exc)})")
                return
            except (RayError, TimeoutError):
                continue
            except Exception:
                if connected():
                    raise
                self._gone = self._lost_line("the connection closed")
                return
            if isinstance(answer, str) or answer[0].name != self.devices[0].name:
                refusal = answer if isinstance(answer, str) else f"it came back on a {answer[0].name}"
                self._lose_for_good(member, refusal)
                return
            member.info, member.ran_on = answer
            member.state = "ready"
            self.revived += 1
            self._event(f"{member.ran_on.describe()} is back", warning=False)
            for _ in range(self.cluster.jobs_per_gpu):
                self._idle.put_nowait(member)
            return

    def _lose_for_good(self, member: Member, reason: str) -> None:
        import ray
        from ray.exceptions import RayError

        member.state = "dead"
        self._event(f"{member.ran_on.describe()} gone: {reason}; its jobs go to the other GPUs")
        self._drop_slots(member)
        self._say_if_none_left()
        if connected():
            with contextlib.suppress(RayError, ValueError, ConnectionError):
                ray.kill(member.handle, no_restart=True)


# The longest reason quoted from an error of our own (a GPU worker that no longer starts), cut at a
# word: a line the user reads, not a log.
REASON_CHARS = 160


def _reason(exc: BaseException) -> str:
    """Why a GPU's job did not come back, in our words: Ray's own errors are pages of internals."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    if isinstance(exc, ActorDiedError):
        text = str(exc).lower()
        return "its node died" if "node" in text and ("died" in text or "dead" in text) else "its actor died"
    if isinstance(exc, ActorUnavailableError):
        return "its node or its actor stopped answering"
    if isinstance(exc, RayActorError):
        return "its actor stopped answering"
    return shorten(ray_error_line(exc), REASON_CHARS)


def shorten(line: str, limit: int) -> str:
    """`line` within `limit` characters, cut at a word boundary with an ellipsis."""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…"
