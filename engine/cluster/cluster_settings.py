"""The time limits and sizes of judging on a Ray cluster, each with the reason for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterSettings:
    # Starting a GPU's actor: Ray places it, then it starts the GPU worker (cuda-bindings, a CUDA
    # context, the harness compiled for the GPU: seconds, WorkerSettings.start_timeout_s at most).
    start_timeout_s: float = 120.0
    # An actor is started for every GPU free when the session starts, or no other session holds where
    # Ray's count of free GPUs lags (fleet.gpus_to_ask; other sessions hold all: the session is
    # refused at once, naming them). One that Ray has not placed this long after the first actor
    # answered (or as long again as that answer took, on a loaded machine) was asked for a GPU another
    # job holds, and is given up: Ray places an actor on a free GPU in a second or two when idle, while
    # a GPU another job holds may stay taken for hours. Also how long the GPUs of a dead process of
    # this machine (a kill -9) get to come free once its actors are ended.
    placement_grace_s: float = 10.0
    # A GPU whose actor cannot be reached (its node lost, the actor restarting) is asked again this
    # often; it rejoins the pool as soon as it answers.
    revive_poll_s: float = 2.0
    # With every GPU of the session out of reach, judging waits this long for one to come back (an
    # actor restarting takes seconds; a node rebooting, minutes) before the session pauses, resumable.
    lost_grace_s: float = 60.0
    # Jobs sent to a GPU's actor at once: one running and one waiting on its node, so the GPU does not
    # idle while an answer and the next request cross the network (its worker still runs them one
    # at a time). A GPU that is lost re-queues both.
    jobs_per_gpu: int = 2
    # On top of the GPU worker's own limits (which catch a hung kernel on the node), an answer that
    # has not crossed the network after this much more is treated as lost: the job runs elsewhere.
    job_slack_s: float = 60.0
    # Compiler actors on the cluster's CPUs, for the compiles a round starts beyond the driver's own
    # compiler processes (engine/compile/compiler_pool.py); each holds one CPU of the cluster and one warm,
    # sandboxed NVRTC process. 0: compile on the driver only.
    remote_compilers: int = 4
    # A task folder is a few KiB of TOML, Python and CUDA; anything near this is not a task folder
    # (a data set copied into it) and is not shipped to every node.
    max_task_bytes: int = 64 * 2**20
    # What a GPU's actor answers within, for a close at the end: it stops its worker process.
    close_timeout_s: float = 15.0
