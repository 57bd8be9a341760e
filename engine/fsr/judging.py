"""Where a session's candidates are judged: this machine's GPUs (engine/judge/judge_environment.py)
or a Ray cluster's (engine/cluster/cluster_environment.py). It sits above both so that the judge never
imports the cluster layer, and without --cluster nothing imports Ray (an optional extra)."""

from __future__ import annotations

import dataclasses

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judge_environment import (
    JudgeEnvironment,
    Progress,
    open_local_environment,
    sandbox_warning,
)


async def open_environment(
    settings: Settings,
    arch: str | None = None,
    compile_only: bool = False,
    gpus: str | int | None = None,
    cluster: str | None = None,
    compilers: int | None = None,
    progress: Progress | None = None,
) -> JudgeEnvironment:
    """`gpus`: "0,1" as a person gave it (refused where there is no GPU), a caller's default index
    (compile-only where there is none), or None for every visible GPU. `cluster`: the address of a Ray
    cluster whose GPUs judge instead of this machine's (then `gpus` names a GPU model). `compilers`:
    local compiler processes where the caller knows how many compiles it needs (None: enough for a
    round). The notice of the environment says what a user should know first (compile-only, an
    unsandboxed compiler...); `progress` hears, while it opens, what it waits for (a cluster's GPUs)."""
    if cluster and not compile_only:
        # Imported only here: without --cluster nothing imports Ray (an optional extra).
        from cuda_llm.engine.cluster.cluster_environment import open_cluster_environment

        env: JudgeEnvironment = await open_cluster_environment(
            settings, cluster, arch, str(gpus) if gpus is not None else None, progress=progress
        )
    else:
        env = await open_local_environment(settings, arch, compile_only, gpus, compilers)
    warning = await sandbox_warning(env.compiler)
    if warning:
        env = dataclasses.replace(env, notice="; ".join(n for n in (warning, env.notice) if n))
    return env
