"""torch.compile's forward as the worker keeps it (engine/gpu/torch_compile.py), on the CPU with
PyTorch's own tracing (Dynamo; the aot_eager backend stands in for Inductor, whose guards are the
same): the task's tensors go in as the module's parameters and buffers, new tensors of the same
shapes run without compiling again, and a call that would compile again raises instead of putting
compile time inside a timed run."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from cuda_llm.engine.gpu.torch_compile import CompiledForward  # noqa: E402


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.scale


def _tensors(rows: int = 4):
    params = {"lin.weight": torch.randn(8, 16), "lin.bias": torch.randn(8), "scale": torch.rand(8)}
    return [torch.randn(rows, 16)], params


def test_the_task_tensors_are_the_parameters_and_a_recompile_raises():
    sizes_set: list[dict] = []
    module = SimpleNamespace(set_sizes=sizes_set.append)
    model = _Model()
    compiled = CompiledForward(torch, module, model, backend="aot_eager")
    for _ in range(3):  # the first call compiles; new tensors of the same shapes (placements) do not
        args, params = _tensors()
        (out,) = compiled({"N": 4}, args, params)
        expected = torch.func.functional_call(model, params, tuple(args))
        torch.testing.assert_close(out, expected)
        assert not torch.equal(out, model(args[0]))  # the module's own weights were not used
    assert sizes_set == [{"N": 4}] * 3  # the module's size constants are set before each call
    args, params = _tensors(rows=5)
    with pytest.raises(Exception, match=r"[Rr]ecompil"):
        compiled({"N": 5}, args, params)


def test_a_module_loaded_from_a_task_folder_compiles(tmp_path):
    """Dynamo reads a module's globals through sys.modules under the module's __module__ name: a task's
    module.py loaded without registering it failed on the GPU with 'No module named
    cuda_llm_module_<task>'. Loaded as the worker loads it, it compiles and runs."""
    from cuda_llm.engine.torchtask.importer import import_module
    from cuda_llm.engine.torchtask.runtime import ImportedModule

    folder = import_module(
        Path(__file__).resolve().parents[2] / "examples" / "pytorch" / "scale_add_relu.py", tmp_path
    ).folder
    loaded = ImportedModule(folder)
    model = loaded.build({})
    assert type(model).__module__ in sys.modules
    inputs = [torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x for x in loaded.module.get_inputs()]
    small = [x[..., :8] if x.dim() else x for x in inputs]
    compiled = torch.compile(model, backend="aot_eager", fullgraph=False)
    torch.testing.assert_close(compiled(*small), model(*small))
