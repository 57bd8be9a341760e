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

import re
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
    # Bindings made from a registry when the screen is built (the run screen's panes' keys).
    registered = getattr(node_class, "registered_bindings", None)
    if callable(registered):
        out.extend(registered())
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


def _keys(binding: Binding, keymap: Mapping[str, str]) -> list[str]:
    """The keys (Textual's names) a binding is on under this keymap."""
    moved = keymap.get(binding.id) if binding.id else None
    return [k.strip() for k in (moved or binding.key).split(",") if k.strip()]


def _taken(node_class: type[DOMNode], keymap: Mapping[str, str]) -> dict[str, str]:
    """key -> binding id, for the keys the keymap moved a binding onto on this screen."""
    taken: dict[str, str] = {}
    for b in _bindings(node_class):
        if b.id and b.id in keymap:
            for key in _keys(b, keymap):
                taken.setdefault(key, b.id)
    return taken


def key_conflicts(classes: Iterable[type[DOMNode]], keymap: Mapping[str, str]) -> list[str]:
    """One line for each key the [keys] table gives to a binding that already had another: the
    moved binding takes the key, the other keeps its other keys (if any)."""
    lines: list[str] = []
    for cls in classes:
        taken = _taken(cls, keymap)
        seen: set[tuple[str, str]] = set()
        for b in _bindings(cls):
            if not b.id or b.id in keymap:
                continue
            for key in _keys(b, keymap):
                owner = taken.get(key)
                if owner is None or owner == b.id or (key, b.id) in seen:
                    continue
                seen.add((key, b.id))
                # What the action keeps: its other keys (an F-key beside the letter), those not taken too.
                left = [
                    k
                    for other in _bindings(cls)
                    if other.action == b.action
                    for k in _keys(other, keymap)
                    if k != key and taken.get(k, other.id) == other.id
                ]
                rest = (
                    f"{b.description} is left on {', '.join(dict.fromkeys(left))}"
                    if left
                    else f"{b.description} has no key left"
                )
                lines.append(
                    f'[keys] "{owner}" = "{keymap[owner]}" takes {key} from {b.id} ({b.description}): {rest}; '
                    "give one of them another key"
                )
    return lines


def keys_of(app: App, binding: Binding, node_class: type[DOMNode] | None = None) -> list[str]:
    """The keys a binding is on now, as shown to the person (a keymap may have moved it; a key the
    keymap gave to another binding of `node_class` is not this one's any more)."""
    keymap: Mapping[str, str] = getattr(app, "keymap", {}) or {}
    keys = _keys(binding, keymap)
    if node_class is not None and not (binding.id and binding.id in keymap):
        taken = _taken(node_class, keymap)
        keys = [k for k in keys if taken.get(k, binding.id) == binding.id]
    return [
        app.get_key_display(binding.with_key(key, key_display=None if key != binding.key else binding.key_display))
        for key in keys
    ]


def key_of(node: DOMNode, action: str) -> str:
    """The key shown for `action` on this screen: its letter (not priority) binding if it has one."""
    found = [b for b in _bindings(type(node)) if b.action == action]
    if not found:
        return action
    for b in sorted(found, key=lambda b: b.priority):  # the letter first, else an F-key in force
        keys = keys_of(node.app, b, type(node))
        if keys:
            return keys[0]
    return action


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
            for k in keys_of(node.app, b, type(node)):
                if k not in keys:
                    keys.append(k)
        ids = ", ".join(dict.fromkeys(b.id for b in bindings if b.id))
        rows.append((" / ".join(keys) or "(none)", bindings[0].description, helps.get(action, ""), ids))
    return rows


def letters_first(active: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
    """Screen.active_bindings with the letter (non-priority) bindings before the F-keys: the footer
    shows one key an action, the first it meets, and that must be the letter even when the config
    moved it (a moved binding is put last). In a text field, which takes the letters, the F-key is
    what is left to show."""
    letters = {k: b for k, b in active.items() if not b.binding.priority or _typed_key(b.binding.key)}
    return letters | {k: b for k, b in active.items() if k not in letters}


def _typed_key(key: str) -> bool:
    """A key a person types (a letter, `/`, `?`), not an F-key or a Ctrl chord: some such bindings
    are priority ones only so that a burst typed after them lands where they moved the focus."""
    return re.fullmatch(r"f\d+", key) is None and "+" not in key


__all__ = [
    "BindingType",
    "binding_ids",
    "check_keymap",
    "help_rows",
    "key_conflicts",
    "key_of",
    "keys_of",
    "letters_first",
]
