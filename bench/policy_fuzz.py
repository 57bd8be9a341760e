"""Differential fuzzing of the include policy against NVRTC itself: random sources built from the
fragments where a lexer can disagree with the compiler (quotes, digit separators, comment openers,
splices, #if 0 groups, control characters, digraphs...) around `#include` lines naming a planted file.
Each source the policy accepts is compiled by NVRTC with no policy and no jail; if NVRTC opens the
planted file, the policy missed a way in, and the source is printed. Prints how many sources were
tried, how many the policy accepted (and NVRTC compiled), and every bypass; asserts nothing.

    python -m bench.policy_fuzz [--seconds 120] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

from cuda_llm.engine.compile import nvrtc_library
from cuda_llm.engine.compile.includes import check_source_policy
from cuda_llm.engine.core.errors import FormatError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.compile.attacks import unguarded_compile  # the test suite's, as bench.huge_reply imports its server

FRAGMENTS = (
    "int a = ", "//", "/*", "*/", "'", '"', "1'0", "0x1'f", "1.'5", "1e'5", "0x'", "1u'", "u8'", "u'", "L'", 'u8"',
    'L"', "\\\\",
    "\\", "\\'", '\\"', "\f", "\v", "\t", " ", "x", ";", "<", ">", "(", ")", "#", "%:", "??", "??/", "_", "'a'",
    '"a"', "''", '""', "/", "*", "R", "$", "@", "`", "\x1a", "\x7f",
)  # fmt: skip
# Whole lines that change how the lines after them are read (a group skipped, a directive's text).
DIRECTIVES = ("#if 0", "#endif", "#else", "#if 1", "#define X ", "#error ", "#warning ", "#pragma unroll ")
INCLUDES = ('#include "FILE"', "#include <FILE>", "# include <FILE>", '#include_next "FILE"')
KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'


def random_source(rng: random.Random, planted: str) -> str:
    lines = []
    for _ in range(rng.randint(1, 7)):
        roll = rng.random()
        if roll < 0.2:
            lines.append(rng.choice(INCLUDES))
        elif roll < 0.45:
            lines.append(rng.choice(DIRECTIVES) + "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 2))))
        else:
            lines.append("".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 4))))
    if not any("FILE" in line for line in lines):
        lines.insert(rng.randint(0, len(lines)), rng.choice(INCLUDES))
    if rng.random() < 0.5:  # close what a line may have opened, so the policy has a whole source to judge
        lines += rng.choice((["*/"], ["#endif"], ["*/", "#endif"]))
    return ("\n".join(lines) + "\n" + KERNEL).replace("FILE", planted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    marker = f"PLANTED_{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as tmp:
        planted = Path(tmp) / "planted.h"
        planted.write_text(f"#error {marker}\n")
        tried = accepted = 0
        bypasses = []
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            source = random_source(rng, str(planted))
            tried += 1
            try:
                check_source_policy(source)
            except FormatError:
                continue
            accepted += 1
            if marker in unguarded_compile(source)[1]:
                bypasses.append(source)
                print(f"BYPASS: {source!r}", flush=True)
    version = ".".join(map(str, nvrtc_library.version()))
    print(
        f"on {platform.node()} ({os.cpu_count()} cores), NVRTC {version}, seed {args.seed}, {args.seconds:.0f} s: "
        f"{tried:,} sources tried, {accepted:,} accepted by the policy and compiled by NVRTC unguarded, "
        f"{len(bypasses)} of them read the planted file"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
