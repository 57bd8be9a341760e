"""Judging on every GPU of a Ray cluster (`--cluster ADDRESS`).

One long-lived Ray actor per GPU wraps today's GPU worker process (engine/gpu/client.py), so a
sticky CUDA error or a hung kernel still kills and restarts only that process. Task folders travel
through Ray's object store, compiled cubins with each request; nothing relies on a shared
filesystem. Ray is an optional extra (`pip install ".[cluster]"` in the checkout): nothing outside this
package imports it, and this package is imported only when a cluster is asked for.

    connection.py   connecting to the cluster; what it offers (nodes, GPUs)
    bundle.py       a task folder packed for the object store, unpacked on a node
    actors.py       the actor that owns one GPU's worker process; the compiler actor
    fleet.py        starting one actor per GPU; refusing nodes that cannot judge
    cluster_pool.py the GpuPool interface over the actors; faults re-queue, lost GPUs come back
    compiler.py     compiling on the driver, overflow to compiler actors on the cluster's CPUs
    cluster_environment.py  the JudgeEnvironment a session judges in
    bench.py        `bench --cluster`: each task's session on a GPU of its own
    doctor.py       what `doctor --cluster` reports
"""

from __future__ import annotations

import importlib.util
import os

from cuda_llm.engine.core.extras import install_hint

# Ray starts a local instance by itself when a call finds no connection (ray.put, ray.kill, an actor
# method's .remote()). After a cluster went away, that would quietly start Ray on this machine, and
# the next session of this process would judge on it instead of refusing. Ray reads this variable
# once, when it is imported; nothing of cuda-llm imports Ray before this package. The GPU worker
# processes inherit it too (they never use Ray).
os.environ["RAY_ENABLE_AUTO_CONNECT"] = "0"


def ray_missing() -> str | None:
    """None when Ray can be imported, else the one line that says how to get it (Ray is not imported)."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed: --cluster needs it ({install_hint('cluster')})"
    return None
