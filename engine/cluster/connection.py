"""Connecting to a Ray cluster, and what it offers.

`--cluster ray://HOST:10001` connects as a Ray client from outside the cluster (a workstation, a
laptop); `--cluster auto` (or `HOST:6379`) joins as a driver on one of its nodes. Either way the
GPUs judged on are the cluster's; only this process's own compiler runs here.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.cluster import ray_missing
from cuda_llm.engine.core.errors import UserError

# A cluster address that does not answer within this is reported at once, rather than after the
# half minute a Ray client takes to give up (or the longer wait of a driver for its GCS).
PROBE_TIMEOUT_S = 5.0
# A Ray client whose head has just started can be turned away while the head readies the session's
# environment ("Initialization failure from server"); it is asked again this often, this long apart.
CONNECT_ATTEMPTS = 3
CONNECT_RETRY_S = 2.0
# The port a Ray head serves clients on, and the port of its GCS (`ray start --head` defaults).
CLIENT_PORT = 10001
GCS_PORT = 6379


class ClusterError(UserError):
    """The cluster cannot be used (not reachable, no GPUs, Ray missing): one line that says why."""


@dataclass(frozen=True)
class NodeSummary:
    node_id: str
    address: str
    cpus: float
    gpus: float
    accelerator: str | None  # Ray's guess of the GPU type ("H100"), when it made one


@dataclass
class ClusterConnection:
    address: str
    owned: bool  # this connection called ray.init (and shuts it down)
    notes: list[str] = field(default_factory=list)

    @property
    def client(self) -> bool:
        return self.address.startswith("ray://")

    def close(self) -> None:
        import ray

        if not self.owned:
            return
        if ray.is_initialized():
            # References into the object store must die with their connection: the next connection of
            # this process is given the same object IDs again, and a reference of this one freed
            # during it (by the garbage collector, say) frees the new object of that ID
            # (ray-project/ray#30089). The pools drop theirs on close; this collects any left in cycles.
            gc.collect()
            ray.shutdown()
        else:
            _forget_lost_client()
        self.owned = False


def _forget_lost_client() -> None:
    """Unregister a Ray client that gave up on its cluster (called once `ray.is_initialized()` is
    False). Ray shuts such a client's worker down but still counts it among this process's client
    connections, with client mode left on, so the next ray.init of the process fails: as a client
    with "already connected ... allow_multiple=True", as a driver with an AssertionError inside Ray.
    A session that paused for a lost cluster could then not resume on another in the same TUI."""
    import ray
    from ray.util import client

    if client.num_connected_contexts():
        ray.shutdown()  # in client mode: closes and unregisters every client context


def connected() -> bool:
    """Whether this process still has its Ray connection. A Ray client gives up about half a minute
    after its cluster went away; from then on every call raises a bare Exception ("Ray Client is not
    connected"), which only this tells apart from a fault of the call itself."""
    import ray

    return ray.is_initialized()


def _host_port(address: str) -> tuple[str, int] | None:
    """The TCP endpoint an address names, or None for `auto` (Ray finds the local cluster itself)."""
    if address == "auto":
        return None
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep:
        return rest, CLIENT_PORT if address.startswith("ray://") else GCS_PORT
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise ClusterError(
            f"--cluster {address}: the port must be a number (ray://HOST:10001, HOST:6379 or auto)"
        ) from None


def _probe(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


# How long a session that lost its GPUs waits for the head to accept a connection, to say whether
# the head or only the GPU nodes are gone: a head that is up answers in a millisecond.
HEAD_PROBE_TIMEOUT_S = 1.0


def head_answers(address: str) -> bool:
    """Whether the head of the cluster at `address` still accepts connections (for `auto`, at the
    GCS address Ray reports). A Ray client takes half a minute to notice its head is gone; this
    tells at once."""
    endpoint = _host_port(address)
    if endpoint is None:
        import ray

        try:
            host, _, port = str(ray.get_runtime_context().gcs_address).rpartition(":")
            endpoint = (host, int(port))
        except Exception:
            return connected()
    return _probe(*endpoint, timeout_s=HEAD_PROBE_TIMEOUT_S) is None


def _init(address: str) -> None:
    import ray

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Ray's own connection warnings: the error below says it all
        # Ray's log lines and the actors' output stay out of this terminal (the TUI draws on it);
        # each GPU worker keeps its stderr in a file on its node.
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)


async def connect(address: str) -> ClusterConnection:
    """Connect this process to the cluster at `address`; raise ClusterError with one line if not."""
    missing = ray_missing()
    if missing:
        raise ClusterError(missing)
    import ray
    from ray import cloudpickle

    from cuda_llm.engine.cluster import actors

    # The actors' code travels to the nodes by value, so that a node without cuda-llm can still run
    # it far enough to say so (engine/cluster/actors.py).
    cloudpickle.register_pickle_by_value(actors)
    if ray.is_initialized():
        return ClusterConnection(address, owned=False)
    endpoint = _host_port(address)
    if endpoint is not None:
        problem = await asyncio.to_thread(_probe, *endpoint)
        if problem:
            raise ClusterError(
                f"cannot reach the Ray cluster at {address} ({problem}): start its head with `ray start --head` "
                "and check the address and port"
            )
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        try:
            await asyncio.to_thread(_init, address)
            break
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            text = str(exc).strip()
            if attempt < CONNECT_ATTEMPTS and "Initialization failure from server" in text:
                await asyncio.sleep(CONNECT_RETRY_S)  # the head's client server is still starting
                continue
            first = text.splitlines()[0] if text else type(exc).__name__
            if "Initialization failure from server" in text:
                first = "its client server could not start a session (see ray_client_server*.err on the head)"
            raise ClusterError(f"cannot connect to the Ray cluster at {address}: {first}") from None
    return ClusterConnection(address, owned=True)


def _nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


async def nodes() -> list[NodeSummary]:
    """The cluster's live nodes, with the CPUs and GPUs Ray counts on each."""
    out = []
    for n in await asyncio.to_thread(_nodes):
        resources = n.get("Resources", {})
        accelerator = next((k.split(":", 1)[1] for k in resources if k.startswith("accelerator_type:")), None)
        out.append(
            NodeSummary(
                n.get("NodeID", "?"),
                n.get("NodeManagerAddress", "?"),
                float(resources.get("CPU", 0)),
                float(resources.get("GPU", 0)),
                accelerator,
            )
        )
    return out


def describe_nodes(summaries: list[NodeSummary]) -> str:
    """'3 nodes, 8 GPUs (H100: 8), 96 CPUs'."""
    gpus = sum(int(n.gpus) for n in summaries)
    kinds = Counter(n.accelerator or "type unknown" for n in summaries for _ in range(int(n.gpus)))
    what = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
    cpus = sum(n.cpus for n in summaries)
    return f"{len(summaries)} node(s), {gpus} GPU(s)" + (f" ({what})" if what else "") + f", {cpus:g} CPU(s)"


async def free_gpus() -> tuple[int, int]:
    """(GPUs free now, GPUs in the cluster)."""
    import ray

    available = await asyncio.to_thread(ray.available_resources)
    total = await asyncio.to_thread(ray.cluster_resources)
    return int(available.get("GPU", 0)), int(total.get("GPU", 0))


async def ray_result(ref: Any, timeout_s: float | None = None) -> Any:
    """A Ray call's result, within `timeout_s` (None: no limit). Neither the limit nor a cancelled
    caller cancels Ray's own future: a Ray client sets each pending call's outcome from its own
    thread (when the connection ends, every one), and on a future cancelled by then it raises
    InvalidStateError there, a traceback on stderr, over the TUI's screen. An outcome nobody waits
    for any more is dropped quietly."""
    return await asyncio.wait_for(asyncio.shield(uncancelled(ref)), timeout_s)


def uncancelled(ref: Any) -> asyncio.Future[Any]:
    """A Ray call as a future whose outcome, if nobody waits for it any more, is dropped quietly (see
    ray_result: cancel the waits on it, never the future)."""
    call = asyncio.ensure_future(ref)
    call.add_done_callback(_dropped)
    return call


def _dropped(call: asyncio.Future[Any]) -> None:
    if not call.cancelled():
        call.exception()  # retrieved: asyncio logs nothing for it
