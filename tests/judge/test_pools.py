"""The pool seam (engine/judge/pools.py): this machine's GPU pool is the one that also runs
torch.compile; a cluster's is not taken for one (the judge says torch.compile is timed locally only).
That both kinds are what the judge needs of a pool is mypy's to check (check.sh)."""

from __future__ import annotations

from fakes.fake_gpu import FakeGpu

from cuda_llm.engine.cluster.cluster_pool import ClusterGpuPool
from cuda_llm.engine.gpu.gpu_pool import GpuPool
from cuda_llm.engine.judge.pools import LocalGpus


def test_only_this_machine_s_pool_runs_torch_compile():
    assert issubclass(GpuPool, LocalGpus)
    assert not issubclass(ClusterGpuPool, LocalGpus)
    assert not isinstance(FakeGpu(), LocalGpus)
