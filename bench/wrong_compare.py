"""What describing a wrong output costs on the host: compare_output (engine/gpu/compare.py) over an
output of 16.8 million float32 elements (elementwise_gelu's 64 x 2^18), wrong in a given share of
its elements, as the GPU worker does for each failed case before it answers. A wrong candidate
holds its GPU for this long. Median of 3; prints the machine it ran on.

    python -m bench.wrong_compare [--elements N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.task.model import Tolerance


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=64 << 18)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    expected = rng.standard_normal(args.elements)
    tol = Tolerance("abs", 1e-5, 1e-5)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}")
    for share in (1.0, 0.5, 0.01, 1e-6):
        got = expected.astype(np.float32)
        wrong = rng.random(args.elements) < share
        got[wrong] += 1.0
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            comparison = compare_output("out", expected, got, tol)
            times.append(time.perf_counter() - start)
        print(f"{share:>8.0e} wrong ({comparison.wrong} elements): {statistics.median(times):6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
