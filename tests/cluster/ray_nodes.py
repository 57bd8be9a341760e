"""Starting a real local Ray cluster for the cluster tests: a head and worker nodes on this machine
(`ray.cluster_utils.Cluster`), each with one GPU that Ray is told it has (there is none: the actors
judge with the fake GPU of tests/fakes, passed as their worker factory)."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_llm.engine.cluster.cluster_settings import ClusterSettings

# The smallest object store Ray accepts: the tests ship a few KiB of task files and cubins.
OBJECT_STORE_BYTES = 80 * 2**20
# A node killed by a test is declared dead after about a second instead of Ray's default 30 s.
FAST_HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}


# How long a test's GPU actors get to start. No test checks that wait (those that want a refusal set
# their own short one), and a loaded CI machine took over 120 s (the product's default) to start Ray's
# workers: a test that waits longer passes later instead of failing.
PATIENT_START_S = 600.0

# The cluster tests' settings: no compiler actors unless a test asks for them (they take the head's
# only CPU), a lost GPU asked again twice a second, a session with every GPU lost paused after 20 s
# rather than a minute, and actors that start as slowly as the machine makes them.
QUIET = ClusterSettings(remote_compilers=0, revive_poll_s=0.5, lost_grace_s=20.0, start_timeout_s=PATIENT_START_S)


def require_ray() -> Any:
    import cuda_llm.engine.cluster  # noqa: F401  (before Ray: it turns Ray's auto-start off, as in use)

    ray = pytest.importorskip("ray", reason='Ray is not installed (pip install ".[cluster]")')
    import fakes.fake_gpu
    from ray import cloudpickle

    # The fake GPU is test code: it travels to the nodes by value (nothing there imports tests/).
    cloudpickle.register_pickle_by_value(fakes.fake_gpu)
    return ray


def start_cluster(nodes: int, client_port: int | None = None, head_gpus: int = 1) -> Any:
    """A head (one CPU, `head_gpus` GPUs) and `nodes - 1` worker nodes (no CPU, one GPU each)."""
    from ray.cluster_utils import Cluster

    head: dict[str, Any] = {
        "num_cpus": 1,
        "num_gpus": head_gpus,
        "include_dashboard": False,
        "object_store_memory": OBJECT_STORE_BYTES,
        "_system_config": FAST_HEALTH_CHECKS,
    }
    if client_port is not None:
        head["ray_client_server_port"] = client_port
    cluster = Cluster(initialize_head=True, head_node_args=head)
    for _ in range(nodes - 1):
        add_gpu_node(cluster)
    cluster.wait_for_nodes()
    return cluster


def add_gpu_node(cluster: Any, **node_args: Any) -> Any:
    node = cluster.add_node(num_cpus=0, num_gpus=1, object_store_memory=OBJECT_STORE_BYTES, **node_args)
    cluster.wait_for_nodes()
    return node
