"""A recorded session as a report: JSON (with the per-round latency history) and Markdown."""

from __future__ import annotations

import json
import time
from typing import Any

from cuda_llm.engine import serialize
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Judgement
from cuda_llm.engine.store.sessions import CandidateRecord, SessionStore


def _figures(j: Judgement | None) -> dict[str, Any] | None:
    if j is None or j.figures is None:
        return None
    f = j.figures
    return {
        "median_us": f.median_us,
        "iqr_us": f.iqr_us,
        "gbps": f.gbps,
        "gflops": f.gflops,
        "floor_us": f.floor_us,
        "bound": f.bound,
        "roofline_share": f.roofline_share,
        "speedup": f.speedup,
        "suspect": f.suspect,
    }


def best_judgement(store: SessionStore, session_id: int) -> Judgement | None:
    record = store.session(session_id)
    if not record.best_label or record.best_label == BASELINE_LABEL:
        return None
    for c in store.candidates(session_id):
        if c.label == record.best_label:
            return c.judgement
    return None


def _candidate_row(c: CandidateRecord) -> dict[str, Any]:
    j = c.judgement
    return {
        "label": c.label,
        "round": c.round,
        "attempt": c.attempt,
        "slot": c.slot,
        "origin": c.origin,
        "status": c.status or "received",
        "message": c.message,
        "median_us": c.median_us,
        "speedup": j.figures.speedup if j and j.figures else None,
        "roofline_share": j.figures.roofline_share if j and j.figures else None,
        "decision": c.decision,
        "decision_reason": c.decision_reason,
        "tokens": (c.completion.completion_tokens if c.completion else None),
    }


def session_report(store: SessionStore, session_id: int) -> dict[str, Any]:
    s = store.session(session_id)
    cands = store.candidates(session_id)
    best = best_judgement(store, session_id)
    rounds = store.rounds(session_id)
    baseline_us = next((c.median_us for c in cands if c.label == BASELINE_LABEL), None)
    return {
        "session": s.id,
        "task": s.task,
        "model": s.model,
        "device": s.device,
        "arch": s.arch,
        "status": s.shown_status,
        "status_message": s.status_message,
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at)),
        "settings": serialize.dump(s.settings),
        "tokens_used": s.tokens_used,
        "baseline_us": baseline_us,
        "best": None
        if best is None
        else {
            "label": best.label,
            "figures": _figures(best),
            "source": best.candidate.source if best.candidate else None,
            "plan": best.candidate.plan.to_json() if best.candidate else None,
        },
        "rounds": rounds,
        "history": [_candidate_row(c) for c in cands],
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# cuda-llm session {report['session']}: {report['task']}", ""]
    lines.append(f"- model: {report['model']}")
    lines.append(f"- device: {report['device']}")
    lines.append(f"- status: {report['status']} {report['status_message']}".rstrip())
    lines.append(f"- started: {report['created']}; tokens used: {report['tokens_used']}")
    if report["baseline_us"]:
        lines.append(f"- baseline: {report['baseline_us']:.1f} us")
    best = report["best"]
    if best and best["figures"]:
        f = best["figures"]
        speed = f"{f['speedup']:.2f}x the baseline, " if f["speedup"] else ""
        lines.append(
            f"- best: {best['label']}: {f['median_us']:.1f} us (IQR {f['iqr_us']:.1f}), {speed}"
            f"{f['roofline_share']:.0%} of the roofline ({f['bound']}-bound), {f['gbps']:.0f} GB/s"
        )
    elif best:
        lines.append(f"- best: {best['label']} (not timed)")
    else:
        lines.append("- best: the baseline (no candidate beat it)")
    lines += ["", "## Rounds", ""]
    lines += [f"- {r['history']}" for r in report["rounds"]] or ["(none finished)"]
    lines += [
        "",
        "## Candidates",
        "",
        "| candidate | status | latency (us) | speedup | roofline | decision | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for h in report["history"]:
        lat = f"{h['median_us']:.1f}" if h["median_us"] else ""
        sp = f"{h['speedup']:.2f}x" if h["speedup"] else ""
        rf = f"{h['roofline_share']:.0%}" if h["roofline_share"] else ""
        note = (h["message"] or "").replace("|", "\\|")[:120]
        lines.append(f"| {h['label']} | {h['status']} | {lat} | {sp} | {rf} | {h['decision'] or ''} | {note} |")
    if best and best["source"]:
        lines += [
            "",
            "## Best kernel",
            "",
            "```cuda",
            best["source"].rstrip(),
            "```",
            "",
            "```json",
            json.dumps(best["plan"], indent=2),
            "```",
        ]
    return "\n".join(lines) + "\n"
