"""Render docs/reliability.md from the fault suite's reports (CUDA_LLM_FAULT_REPORT=... pytest tests/faults).

python -m bench.reliability cpu.json gpu.json [--out docs/reliability.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

GROUP_ORDER = ["kernels", "cheats", "host safety", "model servers", "process and machine"]


def render(reports: list[dict], notes: str = "") -> str:
    lines = [
        "# Reliability: the fault-injection suite",
        "",
        "Every row is a test in tests/faults/ or a GPU negative control in tests/gpu/ (GPU rows are marked "
        "`gpu` and ran on the device named); 'observed' is what the test saw on its last run. Regenerate with "
        "`python -m bench.reliability`.",
        "",
    ]
    for rep in reports:
        lines.append(f"- run of {rep['date']} on {rep['device']} ({len(rep['rows'])} faults)")
    # A later report's row for the same test replaces an earlier one (a re-run after a fix).
    latest: dict[str, dict] = {}
    for rep in reports:
        for r in rep["rows"]:
            latest[r["test"] or r["fault"]] = dict(r, device=rep["device"], date=rep["date"])
    rows = list(latest.values())
    for group in GROUP_ORDER + sorted({r["group"] for r in rows} - set(GROUP_ORDER)):
        chosen = [r for r in rows if r["group"] == group]
        if not chosen:
            continue
        lines += [
            "",
            f"## {group.capitalize()}",
            "",
            "| fault | expected | observed | result | device, date |",
            "|---|---|---|---|---|",
        ]
        for r in chosen:
            cells = [r["fault"], r["expected"], r["observed"], r["outcome"], f"{r['device']}, {r['date']}"]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+")
    p.add_argument("--out", default="docs/reliability.md")
    p.add_argument("--notes", help="a Markdown file appended under the tables")
    args = p.parse_args(argv)
    reports = [json.loads(Path(r).read_text()) for r in args.reports]
    text = render(reports, Path(args.notes).read_text() if args.notes else "")
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
