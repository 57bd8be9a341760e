"""A recorded session as a report: JSON (every candidate with its source and plan, the per-round
history, the settings and the environment it was judged in) and Markdown; and which candidate
`export` writes."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_llm.engine.core import serialize
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Judgement
from cuda_llm.engine.judge.metrics import PHYSICAL_NAME, ROOFLINE_NAME, roofline_text, share_text, speedup_text_of
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
        "roofline": ROOFLINE_NAME,
        "physical_share": f.physical_share,
        "speedup": f.speedup,
        "suspect": f.suspect,
        "sm_clock_mhz": j.timing.sm_clock_mhz if j.timing else None,
    }


def best_record(store: SessionStore, session_id: int) -> CandidateRecord | None:
    """The session's best candidate, None while the baseline is the best."""
    record = store.session(session_id)
    if not record.best_label or record.best_label == BASELINE_LABEL:
        return None
    return next((c for c in store.candidates(session_id) if c.label == record.best_label), None)


def best_judgement(store: SessionStore, session_id: int) -> Judgement | None:
    rec = best_record(store, session_id)
    return rec.judgement if rec else None


def _candidate_row(c: CandidateRecord) -> dict[str, Any]:
    j = c.judgement
    cand = j.candidate if j else None
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
        "counters": j.counters.line() if j and j.counters else None,
        "decision": c.decision,
        "decision_reason": c.decision_reason,
        "tokens": (c.completion.completion_tokens if c.completion else None),
        # The candidate itself, so a report (of a compile-only session too) carries every kernel a GPU
        # machine could judge: `cuda-llm export ID --candidate LABEL` writes one out.
        "source": cand.source if cand else None,
        "plan": cand.plan.to_json() if cand else None,
    }


def session_report(store: SessionStore, session_id: int) -> dict[str, Any]:
    s = store.session(session_id)
    cands = store.candidates(session_id)
    best_rec = best_record(store, session_id)
    best = best_rec.judgement if best_rec else None
    rounds = store.rounds(session_id)
    baseline_us = next((c.median_us for c in cands if c.label == BASELINE_LABEL), None)
    return {
        "session": s.id,
        "task": s.task,
        "task_folder": s.task_folder,
        "task_fingerprint": s.task_fingerprint,
        "model": s.model,
        "server": s.server,
        "device": s.device,
        "arch": s.arch,
        "compile_only": s.compile_only,
        "status": s.shown_status,
        "status_message": s.status_message,
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at)),
        "settings": serialize.dump(s.settings),
        "environment": s.environment,
        "tokens_used": s.tokens_used,
        "baseline_us": baseline_us,
        "best": None
        if best is None
        else {
            "label": best.label,
            "round": best_rec.round if best_rec else None,
            "figures": _figures(best),
            # Hardware counters (engine/counters): what limits it, each launch's metrics, every finding.
            "counters": {"line": best.counters.line(), **serialize.dump(best.counters)} if best.counters else None,
            "source": best.candidate.source if best.candidate else None,
            "plan": best.candidate.plan.to_json() if best.candidate else None,
        },
        "rounds": rounds,
        "history": [_candidate_row(c) for c in cands],
    }


# ---- what `export` writes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Exported:
    label: str
    round: int
    status: str
    source: str
    plan: dict[str, Any]
    why: str  # one line: why this candidate


def choose_export(report: dict[str, Any], label: str | None) -> Exported:
    """The candidate `export` writes: the one named, else the session's best; in a compile-only
    session (nothing validated, so the best is the baseline) the last candidate that compiled and
    bound; in a session where none beat the baseline, the baseline itself."""
    rows = [h for h in report["history"] if h["source"] is not None]
    if label is not None:
        row = next((h for h in report["history"] if h["label"] == label), None)
        if row is None:
            import difflib

            labels = [h["label"] for h in report["history"]]
            close = difflib.get_close_matches(label, labels, n=1)
            hint = f"did you mean {close[0]}?" if close else f"its candidates: {', '.join(labels[:12]) or 'none'}"
            raise UserError(f"session {report['session']} has no candidate {label!r} ({hint})")
        if row["source"] is None:
            raise UserError(
                f"candidate {label} of session {report['session']} has no kernel to export "
                f"({row['status'].replace('_', ' ')}: {row['message']})"
            )
        return _exported(row, f"{label} as asked ({row['status'].replace('_', ' ')})")
    best = report["best"]
    if best is not None and best["source"] is not None:
        row = next(h for h in report["history"] if h["label"] == best["label"])
        figures = best["figures"]
        speed = f", {text}" if (text := speedup_text_of(figures)) else ""
        return _exported(row, f"the session's best{speed}")
    if report["compile_only"]:
        compiled = [h for h in rows if h["status"] == "compiled" and h["label"] != BASELINE_LABEL]
        if compiled:
            row = compiled[-1]
            return _exported(
                row,
                f"compile-only session: nothing was validated, so this is the last candidate that compiled and "
                f"bound ({row['label']}); --candidate LABEL picks another",
            )
    baseline = next((h for h in rows if h["label"] == BASELINE_LABEL), None)
    if baseline is None:
        raise UserError(f"session {report['session']} recorded no candidate with a kernel to export")
    why = (
        "compile-only session and no candidate compiled: the task's baseline"
        if report["compile_only"]
        else "no candidate beat the baseline: the task's baseline"
    )
    return _exported(baseline, why)


def _exported(row: dict[str, Any], why: str) -> Exported:
    return Exported(row["label"], row["round"], row["status"], row["source"], row["plan"], why)


def eval_task_argument(report: dict[str, Any]) -> str:
    """How `cuda-llm eval` names the task: by name for the built-in library, else its folder."""
    from cuda_llm.engine.task.library import builtin_tasks_dir

    folder = Path(report["task_folder"])
    return report["task"] if folder.parent == builtin_tasks_dir() else str(folder)


def _environment_lines(env: dict[str, Any]) -> list[str]:
    if not env:
        return ["- environment: not recorded (a session from an older cuda-llm)"]
    gpu = env.get("gpu") or {}
    lines = [
        f"- cuda-llm {env.get('cuda_llm')}, NVRTC {env.get('nvrtc')}, driver {env.get('driver') or '-'}, "
        f"Python {env.get('python')} on {(env.get('host') or {}).get('os')} ({(env.get('host') or {}).get('machine')})"
    ]
    if gpu:
        lines.append(
            f"- GPU: {gpu.get('name')} (compute {gpu.get('compute_capability')}, {gpu.get('sm_count')} SMs), "
            f"max SM clock {gpu.get('max_sm_clock_mhz')} MHz, memory clock {gpu.get('memory_clock_mhz')} MHz"
        )
    else:
        lines.append(f"- GPU: none (compile-only for {env.get('arch')})")
    cluster = env.get("cluster") or {}
    if cluster.get("gpus"):
        where = ", ".join(f"{g.get('gpu')} #{g.get('index')} on {g.get('node')}" for g in cluster["gpus"])
        lines.append(f"- judged on a Ray cluster: {where}")
    return lines


def _settings_line(settings: dict[str, Any]) -> str:
    from cuda_llm.app.cli.bench_table import settings_text

    return f"- settings: {settings_text(settings)}"


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# cuda-llm session {report['session']}: {report['task']}", ""]
    lines.append(f"- model: {report['model']}" + (f" at {report['server']}" if report.get("server") else ""))
    lines.append(f"- device: {report['device']}")
    lines.append(f"- status: {report['status']} {report['status_message']}".rstrip())
    lines.append(f"- started: {report['created']}; tokens used: {report['tokens_used']}")
    lines.append(_settings_line(report["settings"]))
    lines += _environment_lines(report.get("environment") or {})
    if report["baseline_us"]:
        lines.append(f"- baseline: {report['baseline_us']:.1f} us")
    best = report["best"]
    if best and best["figures"]:
        f = best["figures"]
        speed = f"{text}, " if (text := speedup_text_of(f)) else ""
        lines.append(
            f"- best: {best['label']} (round {best['round']}): {f['median_us']:.1f} us (IQR {f['iqr_us']:.1f}), "
            f"{speed}{roofline_text(f['roofline_share'] * 100, f['bound'])}"
            + (f", {share_text(f['physical_share'] * 100, PHYSICAL_NAME)}" if f.get("physical_share") else "")
            + f", {f['gbps']:.0f} GB/s"
        )
    elif best:
        lines.append(f"- best: {best['label']} (not timed)")
    if best and best.get("counters"):
        lines.append(f"- hardware counters of the best: {best['counters']['line']}")
    elif report["compile_only"]:
        lines.append("- best: none chosen (compile-only: no candidate was validated or timed)")
    else:
        lines.append("- best: the baseline (no candidate beat it)")
    exported = report.get("exported")
    if exported:
        lines.append(f"- exported: {exported['label']}: {exported['why']}")
        lines.append(f"- re-judge it on a GPU with: `{exported['eval']}`")
    lines += ["", "## Rounds", ""]
    lines += [f"- {r['history']}" for r in report["rounds"]] or ["(none finished)"]
    lines += [
        "",
        "## Candidates",
        "",
        "| candidate | status | latency (us) | speedup | achievable roofline | decision | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for h in report["history"]:
        lat = f"{h['median_us']:.1f}" if h["median_us"] else ""
        sp = f"{h['speedup']:.2f}x" if h["speedup"] else ""
        rf = f"{h['roofline_share']:.0%}" if h["roofline_share"] else ""
        note = (h["message"] or "").replace("|", "\\|")[:120]
        status = h["status"] + (" (not validated)" if h["status"] == "compiled" else "")
        lines.append(f"| {h['label']} | {status} | {lat} | {sp} | {rf} | {h['decision'] or ''} | {note} |")
    label = (exported or best or {}).get("label")
    shown = next((h for h in report["history"] if h["label"] == label and h["source"]), None)
    if shown is not None:
        lines += [
            "",
            f"## Kernel {shown['label']}",
            "",
            "```cuda",
            shown["source"].rstrip(),
            "```",
            "",
            "```json",
            json.dumps(shown["plan"], indent=2),
            "```",
        ]
    return "\n".join(lines) + "\n"
