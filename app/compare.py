"""Two candidates side by side: their source, their launch plans and their verdicts (latency,
registers, occupancy...). Plain text in, rich Text out; no widgets, so it is tested without a
terminal. The diff screen (screens/compare.py) lays these out, side by side when the terminal is
wide and unified when it is narrow."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from cuda_llm.app.terminal import terminal_safe
from cuda_llm.engine.judge.judgement import Judgement

CONTEXT_LINES = 2  # unchanged lines kept around each change, as `diff -U2`


@dataclass(frozen=True)
class Side:
    """One of the two candidates compared."""

    label: str
    source: str
    plan: str  # JSON
    judgement: Judgement | None


def verdict_rows(j: Judgement | None) -> dict[str, str]:
    """The figures a verdict is compared by, as shown; empty where the verdict has none."""
    if j is None:
        return {"status": "not judged"}
    rows = {"status": j.status.replace("_", " ")}
    if j.timing is not None:
        rows["latency"] = f"{j.timing.median_us:.2f} us"
        rows["spread (IQR)"] = f"{j.timing.q3_us - j.timing.q1_us:.2f} us"
    kernels = j.compile.kernels if j.compile is not None else ()
    if kernels:
        rows["registers"] = ", ".join(str(k.registers) for k in kernels)
        rows["shared bytes"] = ", ".join(str(k.shared_bytes) for k in kernels)
        spills = sum(k.spill_store_bytes + k.spill_load_bytes for k in kernels)
        rows["spills"] = f"{spills} B"
    resources = (j.validation.resources if j.validation is not None else ()) or (
        j.timing.resources if j.timing is not None else ()
    )
    if resources:
        rows["occupancy"] = ", ".join(f"{r.occupancy:.0%}" for r in resources)
    if j.figures is not None:
        rows["roofline share"] = f"{j.figures.roofline_share:.0%}"
    return {k: v for k, v in rows.items() if v}


def verdict_table(a: Side, b: Side) -> Table:
    """The verdicts' figures in two columns, the rows that differ marked."""
    ra, rb = verdict_rows(a.judgement), verdict_rows(b.judgement)
    table = Table(box=None, padding=(0, 1), show_edge=False)
    table.add_column("", style="bold", no_wrap=True)
    table.add_column(terminal_safe(a.label), no_wrap=True)
    table.add_column(terminal_safe(b.label), no_wrap=True)
    for key in dict.fromkeys([*ra, *rb]):
        va, vb = ra.get(key, "-"), rb.get(key, "-")
        style = "" if va == vb else "bold"
        table.add_row(key, Text(va, style=style), Text(vb, style=style))
    return table


def unified(a_text: str, b_text: str, a_name: str, b_name: str, styles: dict[str, str]) -> Text:
    """`diff -u` of two texts, coloured: + lines, - lines, @@ hunks."""
    out = Text()
    lines = difflib.unified_diff(a_text.splitlines(), b_text.splitlines(), a_name, b_name, lineterm="", n=CONTEXT_LINES)
    for line in lines:
        style = "bold" if line.startswith(("+++", "---")) else styles.get(line[:1], "")
        out.append(terminal_safe(line) + "\n", style=style)
    return out if out.plain else Text(f"{b_name} and {a_name} are the same")


def side_by_side(a_text: str, b_text: str, width: int, styles: dict[str, str]) -> Text:
    """Two columns of `width` characters each: the left's lines beside the right's, changed lines
    coloured, equal runs longer than twice the context folded to a count."""
    a_lines, b_lines = a_text.splitlines(), b_text.splitlines()
    out = Text()

    def row(left: str, right: str, ls: str, rs: str) -> None:
        out.append(terminal_safe(left)[:width].ljust(width), style=ls)
        out.append(" │ ")
        out.append(terminal_safe(right)[:width] + "\n", style=rs)

    matcher = difflib.SequenceMatcher(a=a_lines, b=b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            n = i2 - i1
            if n > 2 * CONTEXT_LINES + 1:
                for k in range(CONTEXT_LINES):
                    row(a_lines[i1 + k], b_lines[j1 + k], "", "")
                out.append(f"   … {n - 2 * CONTEXT_LINES} equal lines …\n", style="dim")
                for k in range(n - CONTEXT_LINES, n):
                    row(a_lines[i1 + k], b_lines[j1 + k], "", "")
            else:
                for k in range(n):
                    row(a_lines[i1 + k], b_lines[j1 + k], "", "")
            continue
        left, right = a_lines[i1:i2], b_lines[j1:j2]
        for k in range(max(len(left), len(right))):
            row(
                left[k] if k < len(left) else "",
                right[k] if k < len(right) else "",
                styles.get("-", "") if k < len(left) else "",
                styles.get("+", "") if k < len(right) else "",
            )
    return out


def plan_text(plan: str) -> str:
    """A plan's JSON, normalised so only real changes show (key order, spacing)."""
    try:
        return json.dumps(json.loads(plan), indent=2, sort_keys=True)
    except ValueError:
        return plan
