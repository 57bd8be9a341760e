"""The cluster tests' shared cluster: Ray is an optional extra, so without it the tests that use
these fixtures skip. Clusters are heavy on a 2-core machine: each test module starts one for all its
tests, with one CPU at most per node, and shuts it down at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ray_nodes import require_ray, start_cluster


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """Three nodes with a GPU each, for a whole test module."""
    require_ray()
    cluster = start_cluster(3)
    try:
        yield cluster
    finally:
        cluster.shutdown()
