"""The model of a task, as loaded from its folder. Plain frozen data: no NumPy, no CUDA."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.plan import LaunchPlan

Category = Literal["memory", "reduction", "ai", "compute"]
Role = Literal["input", "output"]
# Which ceiling the roofline's flops term is measured against.
PeakUnit = Literal["fp32", "fp16_tensor", "none"]
# How a tolerance scales: to |expected| element by element, to the RMS of the expected output,
# to the larger of the two element by element ("rms_or_abs"), to a per-element scale the reference
# computes (e.g. the running sum of |x| for a scan), or exact.
ToleranceScale = Literal["abs", "rms", "rms_or_abs", "custom", "exact"]
# The rules that need the whole expected output's RMS.
RMS_SCALES = frozenset({"rms", "rms_or_abs"})


@dataclass(frozen=True)
class ScalarSpec:
    name: str
    type: str  # a key of engine.dtypes.SCALAR_TYPES
    value: int | float | None  # None: a size, given by each size case

    @property
    def is_size(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class BufferSpec:
    name: str
    dtype: str
    shape: tuple[str, ...]  # integer expressions of the sizes
    role: Role

    def shape_for(self, env: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate(s, env) for s in self.shape)

    def count_for(self, env: Mapping[str, int]) -> int:
        count = 1
        for d in self.shape_for(env):
            count *= d
        return count

    def nbytes_for(self, env: Mapping[str, int]) -> int:
        return self.count_for(env) * DTYPES[self.dtype].itemsize


@dataclass(frozen=True)
class SizeCase:
    label: str  # e.g. "n=1000" or "timing"
    values: tuple[tuple[str, int], ...]  # every size scalar's value, in declaration order
    seeds: int
    is_timing: bool = False

    def as_dict(self) -> dict[str, int]:
        return dict(self.values)


@dataclass(frozen=True)
class Tolerance:
    scale: ToleranceScale
    rtol: float
    atol: float


@dataclass(frozen=True)
class Roofline:
    bytes: str  # minimal bytes moved through device memory, an expression of the sizes
    flops: str
    peak: PeakUnit


@dataclass(frozen=True)
class Task:
    name: str
    summary: str
    category: Category
    dtype_contract: str  # in words, for the prompt: what precision the arithmetic must keep
    description: str
    scalars: tuple[ScalarSpec, ...]
    buffers: tuple[BufferSpec, ...]
    timing: SizeCase
    validation: tuple[SizeCase, ...]  # the timing size is the last one
    tolerance: Tolerance
    roofline: Roofline
    baseline_source: str
    baseline_plan: LaunchPlan
    folder: Path
    fingerprint: str  # hash of the folder's files: keys caches of reference outputs
    # A task imported from a PyTorch module (`tasks import`): the module's file in the folder. Its
    # baseline is then PyTorch eager, run by the GPU worker in place of baseline.cu
    # (engine/gpu/eager.py); the prompt shows the module instead of reference.py.
    pytorch_module: str | None = None

    @property
    def inputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "input")

    @property
    def outputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "output")

    @property
    def sizes(self) -> tuple[ScalarSpec, ...]:
        return tuple(s for s in self.scalars if s.is_size)

    @property
    def reference_file(self) -> Path:
        return self.folder / "reference.py"

    def buffer(self, name: str) -> BufferSpec | None:
        return next((b for b in self.buffers if b.name == name), None)

    def scalar(self, name: str) -> ScalarSpec | None:
        return next((s for s in self.scalars if s.name == name), None)

    def env(self, case: SizeCase) -> dict[str, int]:
        """Integer names visible to expressions: the case's sizes and the integer constants."""
        env = {s.name: s.value for s in self.scalars if isinstance(s.value, int)}
        env.update(case.as_dict())
        return env

    def params(self, case: SizeCase) -> dict[str, int | float]:
        """Every scalar's value for a size case (what the reference function receives)."""
        values: dict[str, int | float] = {s.name: s.value for s in self.scalars if s.value is not None}
        values.update(case.as_dict())
        return values

    def buffer_bytes(self, case: SizeCase) -> int:
        """What the task's own buffers take at a size (the scratch a plan may ask for grows with it)."""
        env = self.env(case)
        return sum(b.nbytes_for(env) for b in self.buffers)

    def bytes_and_flops(self, case: SizeCase) -> tuple[int, int]:
        env = self.env(case)
        return expr.evaluate(self.roofline.bytes, env), expr.evaluate(self.roofline.flops, env)
