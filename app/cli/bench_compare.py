"""Two bench runs side by side (`cuda-llm bench --compare A B`): their rows matched by task, the
ratio of their bests, and what differs in how they were run (settings, environment, model).
The table of one run is app/cli/bench_table.py's."""

from __future__ import annotations

import dataclasses
from typing import Any

from cuda_llm.app.cli.bench_table import (
    BenchRow,
    _md_table,
    _us,
    _x,
    best_cell,
    correct_cell,
    device_line,
    library_cells,
    summaries,
    summary_json,
    summary_lines,
)

COMPARE_COLUMNS = ("task", "best (us)", "speedup", "x of library", "correct", "best found by", "B / A")


def _side(r: BenchRow | None) -> tuple[str, str, str, str, str]:
    if r is None:
        return "-", "-", "-", "not run", "-"
    return (
        _us(r.best_us) if r.validated else "-",
        _x(r.speedup) if r.validated else "-",
        library_cells(r)[1],
        correct_cell(r),
        best_cell(r),
    )


def _differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _differences(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key}: {va} -> {vb}")
    return out


# Environment fields that differ between any two runs and say nothing about the result.
_VOLATILE = ("peaks.measured_at", "gpu.uuid", "host.cpus")


def _comparable(env: dict[str, Any]) -> dict[str, Any]:
    """An environment as two runs compare it: a Ray cluster by its nodes (its actors' ids and GPU
    numbers change from run to run)."""
    nodes = (env.get("cluster") or {}).get("nodes")
    return {**env, "cluster": ", ".join(nodes) if nodes else None}


def compare(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    """Two bench.json files side by side: rows matched by task, what differs in how they were run."""
    rows_a = {r["task"]: BenchRow.from_json(r) for r in a["rows"]}
    rows_b = {r["task"]: BenchRow.from_json(r) for r in b["rows"]}
    tasks = list(rows_a) + [t for t in rows_b if t not in rows_a]
    matched = []
    for t in tasks:
        ra, rb = rows_a.get(t), rows_b.get(t)
        ratio = rb.best_us / ra.best_us if ra and rb and ra.best_us and rb.best_us and ra.validated else None
        matched.append({"task": t, "a": ra, "b": rb, "b_over_a": ratio})
    setting_diffs = _differences(a.get("settings") or {}, b.get("settings") or {})
    env_diffs = [
        d
        for d in _differences(_comparable(a.get("environment") or {}), _comparable(b.get("environment") or {}))
        if not d.startswith(_VOLATILE)
    ]
    return {
        "names": names,
        "a": {k: a.get(k) for k in ("model", "device", "created", "validated")},
        "b": {k: b.get(k) for k in ("model", "device", "created", "validated")},
        "rows": matched,
        "summary": (summaries(list(rows_a.values())), summaries(list(rows_b.values()))),
        "settings_differ": setting_diffs,
        "environment_differs": env_diffs,
        "model_differs": a.get("model") != b.get("model"),
    }


def compare_markdown(cmp: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> str:
    na, nb = cmp["names"]
    lines = [
        f"# cuda-llm bench: {na} against {nb}",
        "",
        f"- A = {na}: {a['model']} on {device_line(a)}; {a.get('created', '?')}",
        f"- B = {nb}: {b['model']} on {device_line(b)}; {b.get('created', '?')}",
    ]
    if cmp["settings_differ"]:
        lines.append("- settings differ: " + "; ".join(cmp["settings_differ"]))
    else:
        lines.append("- settings: the same")
    if cmp["environment_differs"]:
        lines.append("- environment differs: " + "; ".join(cmp["environment_differs"][:12]))
    else:
        lines.append("- environment: the same (versions, GPU, clocks)")
    headers = ["task"] + [f"{c} {side}" for c in COMPARE_COLUMNS[1:-1] for side in ("A", "B")] + ["B / A"]
    body = []
    for m in cmp["rows"]:
        sa, sb = _side(m["a"]), _side(m["b"])
        interleaved = [x for pair in zip(sa, sb, strict=True) for x in pair]
        body.append([m["task"], *interleaved, f"{m['b_over_a']:.3f}" if m["b_over_a"] else "-"])
    lines += ["", *_md_table(headers, body), ""]
    for side, s in zip(("A", "B"), cmp["summary"], strict=True):
        lines.append(f"{side}:")
        lines += [f"  {line}" for line in summary_lines(s)]
    return "\n".join(lines) + "\n"


def compare_json(cmp: dict[str, Any]) -> dict[str, Any]:
    out = dict(cmp)
    out["rows"] = [
        {
            "task": m["task"],
            "a": dataclasses.asdict(m["a"]) if m["a"] else None,
            "b": dataclasses.asdict(m["b"]) if m["b"] else None,
            "b_over_a": m["b_over_a"],
        }
        for m in cmp["rows"]
    ]
    out["summary"] = [[summary_json(s) for s in side] for side in cmp["summary"]]
    return out
