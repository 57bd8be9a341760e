"""Text from outside (model replies, compiler logs, server errors) made safe to show in a terminal.

A reply can hold escape sequences. Printed raw, `ESC ] 0 ; ... BEL` retitles the window, `ESC [ 2 J`
clears the screen, and a carriage return or cursor movement draws a forged verdict over the real one.
Every control character except newline and tab is therefore shown as a visible escape instead (ESC
becomes the four characters `\\x1b`): nothing a model writes can act on the terminal, and a person
can still see that it was there. Unicode's bidirectional overrides and other invisible format characters
get the same treatment, since they make source text read differently from what the compiler sees.
Files we write for people to read (exports, reports) pass through it too: `cat report.md` is a screen.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline; DEL; the C1 controls (0x9b is an 8-bit CSI on some terminals);
# the bidirectional marks, embeddings, overrides and isolates; the line and paragraph separators; and
# the other invisible format characters a reader cannot see but a compiler or a diff does (what
# GitHub flags as "hidden Unicode"): soft hyphen, zero-width space/joiners, word joiner and the
# invisible operators, the byte-order mark, the interlinear annotation marks and the tag characters.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2028\u2029"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """`text` with every character that could act on a terminal replaced by a visible escape."""
    return _UNSAFE.sub(_visible, text)


def has_controls(text: str) -> bool:
    """Whether `text` holds a character terminal_safe would escape."""
    return _UNSAFE.search(text) is not None


def without_controls(text: str) -> str:
    """`text` with those characters removed: for output already laid out, where every one of them
    takes no cell (a full-screen UI measures them as zero-width), so removing them moves nothing."""
    return _UNSAFE.sub("", text)
