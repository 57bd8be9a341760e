"""`cuda-llm` for the terminal tests and benchmarks: the real launcher and app, except that where the
machine has no NVML device the telemetry bar is fed a sample that changes every second (so the
telemetry timer writes to the screen all the time, as on a GPU machine), and, asked for, the fake GPU
runner judges the candidates (decisions and timings without a GPU).

    python tests/tui/tmux_app.py [--fake-gpu] [cuda-llm arguments]
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from cuda_llm.app import app as app_module  # noqa: E402
from cuda_llm.app.launcher import main  # noqa: E402
from cuda_llm.app.widgets.telemetry import NvmlSampler  # noqa: E402
from cuda_llm.engine.gpu.telemetry import TelemetrySample  # noqa: E402

GIB = 1024**3


class ChangingTelemetry:
    """NVML's readings where there are any; else a made-up GPU whose clock and power move."""

    def __init__(self, gpu: int = 0) -> None:
        self.real = NvmlSampler(gpu)
        self.ticks = itertools.count()

    def __call__(self) -> TelemetrySample | None:
        sample = self.real()
        if sample is not None:
            return sample
        t = next(self.ticks)
        return TelemetrySample(
            1410 + 30 * (t % 20),
            1980,
            2619,
            50 + t % 15,
            300.0 + 7 * (t % 40),
            700.0,
            40 + t % 60,
            20,
            12 * GIB,
            80 * GIB,
            0,
            0,
        )


FAKE_GPU = "--fake-gpu"


def use_the_fake_gpu() -> None:
    sys.path[:0] = [str(ROOT / "tests")]
    from fakes.fake_gpu import FakeGpu, fake_environment

    gpu = FakeGpu(delay_s=0.2, library_us=35.0)

    async def environment(self, options):
        return fake_environment(gpu)

    app_module.CudaLlmApp.open_environment = environment  # type: ignore[method-assign]


if __name__ == "__main__":
    argv = sys.argv[1:]
    app_module.NvmlSampler = ChangingTelemetry  # type: ignore[assignment,misc]
    if FAKE_GPU in argv:
        argv.remove(FAKE_GPU)
        use_the_fake_gpu()
    sys.exit(main(argv))
