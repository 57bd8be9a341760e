"""How long the checks in front of the compiler take on hostile sources: the source checks and include
policy (engine/compile/source.py, includes.py) and the kernel-signature scan (engine/contract/
signature.py), each on sources of the largest size a reply may carry, built to be the worst case for
a scanner that looks back along a line, once per token (62,000 lines of `#//`, the case that took 71 s
when the check was quadratic), one comment or splice after another, or one violation per line.
Prints the median of --repeats runs for each and where they ran; asserts nothing.

    python -m bench.policy_time [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

from cuda_llm.engine.compile.source import check_source
from cuda_llm.engine.contract.signature import parse_kernels
from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.core.settings import CompileSettings

KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'


def hostile_sources(size: int) -> dict[str, str]:
    """Each fills `size` bytes (the compiler's source limit) with one pattern, then a kernel."""

    def fill(unit: str, head: str = "", tail: str = "") -> str:
        room = size - len(head) - len(tail) - len(KERNEL)
        return head + unit * (room // len(unit)) + tail + KERNEL

    return {
        "62,000 lines of '#//' (issue 12's case)": "#//\n" * 62_000 + KERNEL,
        "the same, filling the limit": fill("#//\n"),
        "one line of /**/ comments": fill("/**/", tail="\n"),
        "one logical line of splices": fill("x\\\n"),
        "a #define continued over every line": fill("a\\\n", head="#define X \\\n", tail="\n"),
        "a line of char literals": fill("'a' ", tail="\n"),
        "one long identifier": fill("a", head="int ", tail=";\n"),
        "null directives": fill("#\n"),
        "#define lines": fill("#define A 1\n"),
        "a refusal on every line (trigraphs)": fill("??=\n"),
        "a refusal on every line (lone CR)": fill("a\r"),
        "a refusal on every line (token pasting)": fill("a##b\n"),
        "multi-line comments after a quote": fill("'x' /*\n*/\n"),
        "nested parentheses": fill("((((((((((", tail="\n"),
    }


def _time(step: Callable[[str], object], source: str, repeats: int) -> tuple[float, str]:
    times, outcome = [], ""
    for _ in range(repeats):
        started = time.perf_counter()
        try:
            step(source)
            outcome = "passed"
        except FormatError as exc:
            outcome = "refused: " + str(exc).splitlines()[-1].strip()[:50]
        times.append(time.perf_counter() - started)
    return statistics.median(times), outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    settings = CompileSettings()
    print(
        f"on {platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}); median of {args.repeats}; source limit "
        f"{settings.max_source_bytes:,} bytes"
    )
    print(f"{'source':42s} {'KiB':>5s} {'policy':>9s} {'signatures':>11s}  policy outcome")
    for name, source in hostile_sources(settings.max_source_bytes).items():
        policy_s, outcome = _time(lambda s: check_source(s, settings), source, args.repeats)
        scan_s, _ = _time(parse_kernels, source, args.repeats)
        size = len(source.encode()) / 1024
        print(f"{name:42s} {size:5.0f} {policy_s * 1000:7.1f} ms {scan_s * 1000:8.1f} ms  {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
