"""Editing a kernel from the run screen: what `e` edits (a kept draft, the kernel a manual session
asks for, the candidate shown), the editor ($EDITOR or the built-in one), and where the result goes
(the Controller, the manual provider, or a draft kept for later)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_llm.app import drafts
from cuda_llm.app.editing import EditRequest, edit_externally, editor_command, failure_text
from cuda_llm.app.screens.modals import EditResult, EditScreen, compose_reply
from cuda_llm.app.screens.runscreen.worker import manual_provider
from cuda_llm.app.state import LOG
from cuda_llm.app.widgets.kernel import source_of
from cuda_llm.engine.fsr.session import candidate_label
from cuda_llm.engine.llm.base import RequestKey

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def edit(screen: RunScreen) -> None:
    if screen.editing:
        screen.notify("an editor is open already", timeout=3)
        return
    request = _draft_request(screen) or _edit_request(screen)
    if request is None:
        return
    screen.editing = True
    screen.run_worker(_run_editor(screen, request), group="editor", exit_on_error=False)


def _draft_request(screen: RunScreen) -> EditRequest | None:
    draft, screen.draft = screen.draft, None  # offered once; it stays on disk until submitted
    if draft is None or ((manual := manual_provider(screen)) is not None and manual.waiting()):
        return None
    view = screen.view
    same = draft.session_id == view.session_id and draft.based_on in view.candidates
    return EditRequest(
        f"Your kept edit of {draft.based_on} (session {draft.session_id})",
        draft.source,
        draft.plan,
        based_on=draft.based_on if same else None,
        draft=draft,
    )


def _edit_request(screen: RunScreen) -> EditRequest | None:
    """What `e` edits: in manual mode the kernel asked for (a repair starts from the candidate
    that failed, with its errors beside it); else the candidate shown, or the best."""
    view = screen.view
    best = view.best_source()
    manual = manual_provider(screen)
    if manual is not None and manual.waiting():
        key = manual.waiting()[0]
        label = candidate_label(key)
        failed = None
        if key.attempt > 0:
            before = candidate_label(RequestKey(key.round, key.attempt - 1, key.slot))
            failed = view.candidates.get(before)
        source, plan = source_of(failed, best) if failed is not None else source_of(None, best)
        what = f", a repair of {failed.label}" if failed is not None else ""
        return EditRequest(
            f"Write {label} (round {key.round}{what})",
            source,
            plan,
            failure_text(failed) if failed is not None else "",
            manual_key=key,
        )
    c = view.focused()
    source, plan = source_of(c, best)
    label = c.label if c is not None else (best.label if best is not None else "")
    if not source:
        screen.notify("no kernel to edit yet", severity="warning", timeout=4)
        return None
    errors = failure_text(c) if c is not None and c.judgement is not None and c.judgement.failed else ""
    return EditRequest(f"Edit {label}", source, plan, errors, based_on=label)


async def _run_editor(screen: RunScreen, request: EditRequest) -> None:
    try:
        command = editor_command()
        result: EditResult | str | None
        if command is not None:
            result = await edit_externally(screen.app, command, request)
        else:
            result = await screen.app.push_screen_wait(
                EditScreen(request.title, request.source, request.plan, request.errors)
            )
    finally:
        screen.editing = False
    submit(screen, request, result)


def _keep(screen: RunScreen, request: EditRequest, result: EditResult) -> str:
    """Keep an edit that cannot be submitted now; where it is, for the line that says so."""
    sid = screen.view.session_id
    if sid is None:
        return "it could not be kept: the session never opened"
    try:
        path = drafts.keep(screen.request.options.db, sid, request.based_on or "", result.source, result.plan_json)
    except OSError as exc:
        return f"it could not be kept ({exc.strerror or exc})"
    if request.draft is not None and request.draft.path != path:
        drafts.forget(request.draft)
    return f"it is kept in {path} and offered when you resume session {sid} (or start a new one)"


def submit(screen: RunScreen, request: EditRequest, result: EditResult | str | None) -> None:
    if isinstance(result, str):  # why nothing was submitted
        screen.notify(result, severity="warning", timeout=8, markup=False)
        return
    if result is None:
        return
    app = screen.app
    if result.keep_only:  # the app is quitting with the editor open
        app.messages.add(f"your edit was not submitted: {_keep(screen, request, result)}", "warning")  # type: ignore[attr-defined]  # a CudaLlmApp
        app.call_later(app.run_action, "quit")
        return
    manual = manual_provider(screen)
    if request.manual_key is not None:
        if manual is None or request.manual_key not in manual.waiting():
            screen.notify("that request is no longer waiting: nothing was submitted", severity="warning")
            return
        manual.provide(request.manual_key, compose_reply(result.source, result.plan_json))
        return
    view = screen.view
    if not view.running:
        line = f"the session has ended: nothing was submitted; {_keep(screen, request, result)}"
        view.log.append(line)
        screen.redraw({LOG})
        screen.notify(line, severity="warning", timeout=15, markup=False)
        return
    screen.control.submit_edit(result.source, result.plan_json, based_on=request.based_on)
    if request.draft is not None:
        drafts.forget(request.draft)
    view.log.append(
        f"your edit of {request.based_on} was submitted: it is judged now if a decision is pending, "
        "else at the end of the round"
    )
    screen.redraw({LOG})


def offer_draft(screen: RunScreen, session_id: int) -> None:
    """An edit kept from before: of this session first, else the newest of any."""
    db = screen.request.options.db
    found = drafts.kept(db, session_id) or drafts.kept(db)
    if not found:
        return
    draft = screen.draft = found[0]
    where = "" if draft.session_id == session_id else f" in session {draft.session_id}"
    line = (
        f"an edit of {draft.based_on}{where} you did not submit is kept: "
        f"{screen.keys()['edit']} opens it ({draft.path})"
    )
    screen.view.log.append(line)
    screen.notify(line, timeout=10, markup=False)
