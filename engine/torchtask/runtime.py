"""An imported task's module at run time: the reference (float64) and the eager program share it.

The task folder holds the user's file as module.py and, in task.toml's [pytorch] table, which
task buffer is which forward argument, parameter or output. Sizes are the module's own constants:
they are set on the module before it is built and before every forward (forward may read them).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tomllib
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from cuda_llm.engine.task.dtypes import DTYPES, dtype_of_numpy, dtype_of_torch

# Past this many elements the float64 reference runs on the GPU when there is one (a GEMM of a few
# thousand squared takes minutes in float64 on a CPU, a second on an H100).
GPU_REFERENCE_MIN_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class Binding:
    """Task buffers <-> the module's tensors, from task.toml's [pytorch] table."""

    module_file: str
    inputs: tuple[str, ...]  # forward's arguments, in order
    parameters: dict[str, str]  # task buffer -> parameter or buffer path in the module
    outputs: tuple[str, ...]  # what forward returns, in order
    fixed: dict[str, int]  # constants kept at the file's values
    returns_tuple: bool
    dtypes: dict[str, str]  # task buffer -> its dtype (bfloat16's host arrays hold bits, not values)
    # Tuple constants holding sizes: each position the name of a size (or fixed constant) or a number.
    tuples: dict[str, tuple[str | int, ...]] = field(default_factory=dict)


def read_binding(folder: Path) -> Binding:
    toml = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    data = toml["pytorch"]
    return Binding(
        dtypes={name: str(b.get("dtype", "")) for name, b in toml.get("buffers", {}).items()},
        module_file=data.get("module", "module.py"),
        inputs=tuple(data["inputs"]),
        parameters=dict(data.get("parameters", {})),
        outputs=tuple(data["outputs"]),
        fixed=dict(data.get("fixed", {})),
        returns_tuple=bool(data.get("returns_tuple", len(data["outputs"]) > 1)),
        tuples={k: tuple(v) for k, v in data.get("tuples", {}).items()},
    )


def bits_view(torch: Any, dtype: str) -> Any:
    """The torch integer type a host array of `dtype` is viewed through, when NumPy carries the dtype
    in another's bits (bfloat16 in uint16); None when NumPy holds it as it is."""
    d = DTYPES[dtype]
    return getattr(torch, f"int{8 * d.itemsize}") if d.numpy != d.name else None


def to_torch(torch: Any, array: np.ndarray, dtype: str) -> Any:
    """A host array of a task dtype as a CPU tensor of that dtype (bf16 bits reinterpreted, exactly)."""
    a = np.asarray(array, order="C")  # ascontiguousarray would make a 0-d array 1-d
    via = bits_view(torch, dtype)
    if via is None:
        return torch.from_numpy(a)
    d = DTYPES[dtype]
    return torch.from_numpy(a.view(np.dtype(f"int{8 * d.itemsize}"))).view(getattr(torch, str(d.torch)))


def to_numpy(torch: Any, tensor: Any) -> np.ndarray:
    """A tensor on the host as its task dtype's NumPy carrier (a bf16 tensor as its uint16 bits)."""
    t = tensor.detach().contiguous().cpu()
    d = dtype_of_torch(str(t.dtype))
    via = bits_view(torch, d.name) if d is not None else None
    if d is None or via is None:
        return t.numpy()
    return t.view(via).numpy().view(np.dtype(d.numpy))


def torch_seed(rng: np.random.Generator) -> int:
    """The torch seed of a case, drawn from the task's seeded generator (engine/task/reference.py)."""
    return int(rng.integers(0, 2**62))


def case_torch_seed(seed: int) -> int:
    """torch_seed() of the generator the host path makes for a case's seed: the same torch seed
    whether the case is made on the host or on the GPU."""
    return torch_seed(np.random.default_rng(seed))


def _torch_dtype(torch: Any, dtype: Any) -> Any:
    """The torch dtype a reference computes in, from the NumPy float type asked for."""
    d = dtype_of_numpy(np.dtype(dtype).name)
    if d is None or not d.is_float or d.torch is None:
        raise ValueError(f"a reference computes in a float type PyTorch has, not {np.dtype(dtype).name}")
    return getattr(torch, d.torch)


def _casts_to(torch: Any, dtype: Any) -> Any:
    """A scope in which the module's own float casts (`x.to(torch.float32)`, `.float()`, `.bfloat16()`,
    `dtype=torch.float16` of a factory) give `dtype` instead: the reference computes the module's math
    in float64 throughout, where the module runs parts of it in fp32 or rounds to bf16 between steps.
    The tolerance, not the reference, allows for the module's own precision (engine/task/dtypes.py)."""
    from torch.overrides import TorchFunctionMode

    tensor = torch.Tensor
    narrowing = {tensor.float, tensor.half, tensor.bfloat16, tensor.double}

    def lift(value: Any) -> Any:
        return dtype if isinstance(value, torch.dtype) and value.is_floating_point else value

    class CastsTo(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func in narrowing:
                return args[0].to(dtype)
            if "dtype" in kwargs:
                kwargs["dtype"] = lift(kwargs["dtype"])
            if func in (tensor.to, tensor.type):
                args = tuple(lift(a) for a in args)
            return func(*args, **kwargs)

    return CastsTo()


class ImportedModule:
    """module.py of one task folder, loaded once per process."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.binding = read_binding(self.folder)
        path = self.folder / self.binding.module_file
        # A name of its own per folder, registered in sys.modules: torch.compile (Dynamo) looks the
        # module up by its __module__ name to read its globals, and fails on an unregistered one.
        name = f"cuda_llm_module_{self.folder.name}_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        self.module: ModuleType = importlib.util.module_from_spec(spec)
        sys.modules[name] = self.module
        try:
            spec.loader.exec_module(self.module)
        except BaseException:
            sys.modules.pop(name, None)
            raise

    def set_sizes(self, sizes: Mapping[str, int | float]) -> None:
        values = {**self.binding.fixed, **sizes}
        for k, v in values.items():
            if hasattr(self.module, k):
                setattr(self.module, k, v)
        for k, parts in self.binding.tuples.items():  # `shape = (batch, dim)` rebuilt from its sizes
            if hasattr(self.module, k):
                rebuilt = [values[p] if isinstance(p, str) else p for p in parts]
                setattr(self.module, k, type(getattr(self.module, k))(rebuilt))

    def init_inputs(self) -> list[Any]:
        fn = getattr(self.module, "get_init_inputs", None)
        return list(fn()) if callable(fn) else []

    def build(self, sizes: Mapping[str, int | float], device: str = "cpu") -> Any:
        import torch

        self.set_sizes(sizes)
        with torch.device(device):
            return self.module.Model(*self.init_inputs())

    def generate(self, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Inputs as get_inputs() makes them and parameters as Model(*get_init_inputs()) initialises
        them, from one torch seed drawn from `rng` (so the task's seeds give different values)."""
        import torch

        made = self.make_inputs(sizes, torch_seed(rng), "cpu")
        return {name: to_numpy(torch, t) for name, t in made.items()}

    def make_inputs(self, sizes: Mapping[str, int | float], seed: int, device: str) -> dict[str, Any]:
        """The task's inputs as tensors on `device`: get_inputs() called under that device (its random
        tensors are drawn there, with the file's own distributions) and the parameters as
        Model(*get_init_inputs()) initialises them there, after torch.manual_seed(seed). On the CPU
        these are generate()'s values; on a GPU its generator draws others, as reproducibly."""
        import torch

        torch.manual_seed(seed)
        model = self.build(sizes, device)
        with torch.device(device):
            made = self.module.get_inputs()
        out = {
            name: torch.as_tensor(t).detach().to(device).contiguous()
            for name, t in zip(self.binding.inputs, made, strict=True)
            if isinstance(t, torch.Tensor)  # a number is a task scalar: the sizes carry it
        }
        state = self.state_of(model)
        for name, path in self.binding.parameters.items():
            out[name] = state[path].detach().contiguous()
        return out

    def reference_tensors(self, inputs: Mapping[str, Any], sizes: Mapping[str, int | float]) -> dict[str, Any]:
        """forward in float64 on the inputs' own device: each output as a contiguous float64 tensor
        there. Nothing is copied to the host."""
        import torch

        device = next(iter(inputs.values())).device if inputs else torch.device("cpu")

        def wide(t: Any) -> Any:
            return t.to(torch.float64) if t.is_floating_point() else t

        model = self.build(sizes, str(device)).to(torch.float64)
        # A Python number among get_inputs() is a task scalar: the sizes carry its value.
        args = [wide(inputs[name]) if name in inputs else sizes[name] for name in self.binding.inputs]
        # forward may update the module's buffers in place (BatchNorm's running statistics and its
        # int64 num_batches_tracked in training mode): they get copies, so the device's masters of the
        # task's inputs stay as made (wide() copies only what it converts).
        changing = {path for path, _ in model.named_buffers(remove_duplicate=False)}
        params = {
            path: wide(inputs[name]).clone() if path in changing else wide(inputs[name])
            for name, path in self.binding.parameters.items()
        }
        # The module's own casts (.to(torch.float32), .bfloat16(), dtype=) give float64 here too, as
        # on the host path: the reference is the module's math without its rounding.
        with _casts_to(torch, torch.float64):
            outs = self.forward(model, sizes, args, params)
        del args, params, model  # the float64 copies of the inputs go before the results are kept
        # float64 whatever the output's dtype: the comparison reads the reference as float64, as it
        # reads the host path's (engine/gpu/reference_cache.py).
        return {
            name: o.detach().to(torch.float64).contiguous() for name, o in zip(self.binding.outputs, outs, strict=True)
        }

    @staticmethod
    def state_of(model: Any) -> dict[str, Any]:
        return dict(model.named_parameters(remove_duplicate=False)) | dict(model.named_buffers(remove_duplicate=False))

    def forward(
        self, model: Any, sizes: Mapping[str, int | float], args: list[Any], params: dict[str, Any]
    ) -> list[Any]:
        """forward with the task's buffers as arguments and as the module's parameters and buffers."""
        import torch

        self.set_sizes(sizes)
        with torch.no_grad():
            out = torch.func.functional_call(model, params, tuple(args))
        return list(out) if isinstance(out, list | tuple) else [out]

    def reference(
        self, inputs: dict[str, np.ndarray], sizes: dict[str, int], dtype: Any = np.float64
    ) -> dict[str, np.ndarray]:
        """The module at `dtype` (float64 for validation) on the task's inputs and parameters."""
        import torch

        elements = sum(a.size for a in inputs.values())
        device = "cuda" if torch.cuda.is_available() and elements >= GPU_REFERENCE_MIN_ELEMENTS else "cpu"
        if device == "cuda":
            try:
                return self._reference_on(device, inputs, sizes, dtype)
            except torch.cuda.OutOfMemoryError:
                pass  # float64 copies and intermediates beside the judge's buffers: slower, on the host
        return self._reference_on("cpu", inputs, sizes, dtype)

    def _reference_on(
        self, device: str, inputs: dict[str, np.ndarray], sizes: dict[str, int], dtype: Any
    ) -> dict[str, np.ndarray]:
        import torch

        tdtype = _torch_dtype(torch, dtype)

        def tensor(name: str) -> Any:
            t = to_torch(torch, inputs[name], self.binding.dtypes.get(name, inputs[name].dtype.name)).to(device)
            return t.to(tdtype) if t.is_floating_point() else t

        try:
            model = self.build(sizes, device).to(tdtype)
            args = [tensor(name) if name in inputs else sizes[name] for name in self.binding.inputs]
            # forward may update the module's buffers in place (BatchNorm's running statistics in
            # training mode): they get copies, so the task's inputs stay as generated.
            changing = {path for path, _ in model.named_buffers(remove_duplicate=False)}
            params = {
                path: tensor(name).clone() if path in changing else tensor(name)
                for name, path in self.binding.parameters.items()
            }
            with _casts_to(torch, tdtype):
                outs = self.forward(model, sizes, args, params)
            return {
                name: o.detach().to("cpu", torch.float64 if o.is_floating_point() else o.dtype).numpy()
                for name, o in zip(self.binding.outputs, outs, strict=True)
            }
        finally:
            if device == "cuda":
                # The GPU worker shares the device with the programs it judges: give the memory back.
                with suppress(Exception):
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
