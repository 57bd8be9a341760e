"""Every task's baseline passes its own validation at every size and seed, on the GPU."""

import pytest

from cuda_llm.engine.task import TaskLibrary

pytestmark = pytest.mark.gpu

TASKS = TaskLibrary().names()


@pytest.mark.parametrize("name", TASKS)
def test_baseline_passes_its_own_validation(gpu, name):
    j = gpu.judge(name)
    task = gpu.task(name)
    assert j.status == "correct", f"{name}: {j.status}: {j.message}\n{j.detail}"
    cases = j.validation.cases
    assert len(cases) == sum(c.seeds for c in task.validation), "every size and seed ran, the timing size included"
    assert all(c.passed for c in cases)
    assert max(c.worst_ratio for c in cases) <= 1.0
    assert j.validation.resources, "launch resources were reported"
