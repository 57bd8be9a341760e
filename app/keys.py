"""Keys: every action of the TUI has a letter (lazygit/k9s style: terminals, tmux set-ups and SSH
clients that eat F-keys still pass letters) and, where one exists, an F-key beside it.

Each letter binding has an id ("run.accept"), and the config file's [keys] table moves it:

    [keys]
    "run.accept" = "y"
    "run.reject" = "x,n"

The ids are listed on each screen's help (?) and in the README. This module turns the [keys] table
into Textual's keymap (App.set_keymap) and reports ids it does not know, and it answers which key
an action is on now, for the help screen and the status line's hints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from textual.app import App
from textual.binding import ActiveBinding, Binding, BindingType
from textual.dom import DOMNode


def _bindings(node_class: type[DOMNode]) -> list[Binding]:
    """The bindings our own classes declare (Textual's defaults, such as Tab for the next widget,
    are not ours to list)."""
    out = []
    for cls in reversed(node_class.__mro__):
        if not cls.__module__.startswith("cuda_llm."):
            continue
        for b in cls.__dict__.get("BINDINGS", []):
            if isinstance(b, Binding):
                out.append(b)
    return out


def binding_ids(classes: Iterable[type[DOMNode]]) -> dict[str, str]:
    """id -> description of every binding with an id on these screens (and the app)."""
    ids: dict[str, str] = {}
    for cls in classes:
        for b in _bindings(cls):
            if b.id:
                ids.setdefault(b.id, b.description)
    return ids


def check_keymap(keys: Mapping[str, str], known: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The [keys] table as a keymap, and one line naming the ids that are not bindings (they are
    left out; a typo must not keep the app from starting)."""
    usable = {k: v.replace(" ", "") for k, v in keys.items() if k in known and v.strip()}
    unknown = sorted(k for k in keys if k not in known)
    empty = sorted(k for k in keys if k in known and not keys[k].strip())
    problems = []
    if unknown:
        problems.append(f"unknown binding id(s) {', '.join(unknown)}")
    if empty:
        problems.append(f"no key given for {', '.join(empty)}")
    if not problems:
        return usable, None
    return usable, "[keys] in the config: " + "; ".join(problems) + " (ignored; ? lists the ids)"


def keys_of(app: App, binding: Binding) -> list[str]:
    """The keys a binding is on now, as shown to the person (a keymap may have moved it)."""
    keymap: Mapping[str, str] = getattr(app, "keymap", {}) or {}
    moved = keymap.get(binding.id) if binding.id else None
    if not moved:
        return [app.get_key_display(binding)]
    return [app.get_key_display(binding.with_key(key.strip(), key_display=None)) for key in moved.split(",")]


def key_of(node: DOMNode, action: str) -> str:
    """The key shown for `action` on this screen: its letter (not priority) binding if it has one."""
    found = [b for b in _bindings(type(node)) if b.action == action]
    if not found:
        return action
    letter = next((b for b in found if not b.priority), found[0])
    return keys_of(node.app, letter)[0]


def help_rows(node: DOMNode, helps: Mapping[str, str], skip: tuple[str, ...] = ()) -> list[tuple[str, str, str, str]]:
    """(keys, action, what it does, binding id) for every action bound on `node`, in binding order."""
    by_action: dict[str, list[Binding]] = {}
    for b in _bindings(type(node)):
        if b.action.partition("(")[0] in skip:
            continue
        by_action.setdefault(b.action, []).append(b)
    rows = []
    for action, bindings in by_action.items():
        keys: list[str] = []
        for b in bindings:
            for k in keys_of(node.app, b):
                if k not in keys:
                    keys.append(k)
        ids = ", ".join(dict.fromkeys(b.id for b in bindings if b.id))
        rows.append((" / ".join(keys), bindings[0].description, helps.get(action, ""), ids))
    return rows


def letters_first(active: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
    """Screen.active_bindings with the letter (non-priority) bindings before the F-keys: the footer
    shows one key an action, the first it meets, and that must be the letter even when the config
    moved it (a moved binding is put last). In a text field, which takes the letters, the F-key is
    what is left to show."""
    letters = {k: b for k, b in active.items() if not b.binding.priority}
    return letters | {k: b for k, b in active.items() if k not in letters}


__all__ = ["BindingType", "binding_ids", "check_keymap", "help_rows", "key_of", "keys_of", "letters_first"]
