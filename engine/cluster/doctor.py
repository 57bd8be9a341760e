"""What `doctor` says about Ray and, given `--cluster`, about the cluster: its nodes, and its GPUs by
model as their workers report them (each GPU's actor is started, as a session would, and stopped)."""

from __future__ import annotations

from importlib import metadata

from cuda_llm.engine.cluster import ray_missing
from cuda_llm.engine.core.extras import install_hint
from cuda_llm.engine.core.settings import Settings

# (name, status ok|warn|fail, detail): the rows doctor prints.
Row = tuple[str, str, str]


def ray_row() -> Row:
    """Whether Ray is installed (found without importing it)."""
    if ray_missing():
        return "ray", "ok", f"not installed (only --cluster needs it: {install_hint('cluster')})"
    try:
        version = metadata.version("ray")
    except metadata.PackageNotFoundError:
        version = "installed"
    return "ray", "ok", f"{version} (for --cluster)"


async def cluster_rows(address: str, settings: Settings | None = None) -> list[Row]:
    from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
    from cuda_llm.engine.cluster.connection import ClusterError, connect, describe_nodes, nodes
    from cuda_llm.engine.cluster.fleet import give_back, start_fleet

    cluster = ClusterSettings()
    try:
        connection = await connect(address)
    except ClusterError as exc:
        return [("cluster", "fail", str(exc))]
    try:
        rows: list[Row] = [("cluster", "ok", f"{address}: {describe_nodes(await nodes())}")]
        try:
            fleet = await start_fleet(connection, settings or Settings(), cluster)
        except ClusterError as exc:
            return [*rows, ("cluster gpus", "fail", str(exc))]
        try:
            rows.append(("cluster gpus", "ok", f"{fleet.describe()} can judge"))
            rows += [("cluster node", "warn", f"refused {line}") for line in sorted(set(fleet.refused))]
        finally:
            await give_back(fleet.members, cluster.close_timeout_s)
        return rows
    finally:
        connection.close()
