"""An imported task's cases made where the GPU worker makes them (engine/torchtask/runtime.py's
make_inputs and reference_tensors, called on the GPU by engine/gpu/eager.py): run here on the CPU, they
give exactly the host path's inputs and float64 reference, so the same seed means the same problem
whichever path made it (on a GPU its generator draws other values, as reproducibly)."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import EXAMPLES

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    """conv2d_bias imported: an input from get_inputs() and two parameters from Model()."""
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.torchtask.importer import import_module

    folder = import_module(EXAMPLES / "conv2d_bias.py", tmp_path_factory.mktemp("dc")).folder
    return load_task(folder)


def test_made_on_the_cpu_they_are_the_host_path_s_inputs_and_reference(conv):
    from cuda_llm.engine.task.reference import case_seed, load_reference
    from cuda_llm.engine.torchtask.runtime import ImportedModule, case_torch_seed

    task = conv
    case = task.validation[0]
    seed = case_seed(task, case, 1)
    host = load_reference(task)
    inputs = host.inputs(case, seed)
    expected = host.outputs(inputs, case)
    module = ImportedModule(task.folder)
    made = module.make_inputs(task.params(case), case_torch_seed(seed), "cpu")
    assert set(made) == set(inputs) == {b.name for b in task.inputs} and len(made) == 3, "x, the weight, the bias"
    for name, values in inputs.items():
        np.testing.assert_array_equal(made[name].numpy(), values, err_msg=name)
    got = module.reference_tensors(made, task.params(case))
    for name, values in expected.items():
        assert got[name].dtype == torch.float64 and got[name].is_contiguous()
        np.testing.assert_allclose(got[name].numpy().reshape(values.shape), values, rtol=1e-12, atol=1e-12)


def test_each_seed_makes_other_values(conv):
    from cuda_llm.engine.torchtask.runtime import ImportedModule

    task = conv
    case = task.validation[0]
    module = ImportedModule(task.folder)
    a = module.make_inputs(task.params(case), 1, "cpu")
    again = module.make_inputs(task.params(case), 1, "cpu")
    b = module.make_inputs(task.params(case), 2, "cpu")
    for name in a:
        assert torch.equal(a[name], again[name]), f"{name}: the same seed, the same values"
        assert not torch.equal(a[name], b[name]), f"{name}: another seed, other values"


async def test_the_gpu_cheat_tests_kernels_compile_and_bind(tmp_path):
    """tests/torchtask/test_gpu_cheats.py's kernels, compiled and bound to elementwise_gelu without a GPU:
    on the GPU they must fail for what they do, never for how they are written."""
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.fsr.judging import open_environment
    from cuda_llm.engine.judge.judgement import Candidate
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.task.plan import parse_plan
    from cuda_llm.engine.torchtask.importer import import_module

    from .test_gpu_cheats import CACHES_AFTER, PLAN, WRITES_NOTHING

    task = load_task(import_module(EXAMPLES / "elementwise_gelu.py", tmp_path).folder)
    env = await open_environment(Settings(), "sm_90", compile_only=True, compilers=1)
    try:
        judge = env.judge(task, Settings())
        for label, source in (("nothing", WRITES_NOTHING), ("caches", CACHES_AFTER.replace("THRESHOLD", "26"))):
            j = await judge.judge(Candidate(label, source, parse_plan(PLAN), origin="user"))
            assert j.status == "compiled", (label, j.message)
    finally:
        await env.close()
