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


def c_source_safe(text: str) -> str:
    """CUDA C++ source made terminal-safe without changing the program it compiles to (an exported
    kernel.cu must be the kernel that was judged). terminal_safe's `\\x1b` is not that: in a string
    literal it swallows a hex digit after it (`\\x1bA` is one escape), it turns U+009B into the byte
    0x9b where the source had its UTF-8 bytes, and between tokens (a form feed is whitespace) a
    backslash does not compile. So: inside a string or character literal each such character becomes
    octal escapes of its UTF-8 bytes (three digits each, so nothing after one can extend it); between
    tokens a form feed or vertical tab becomes a space; in comments the visible escape stays (a
    comment means nothing to the program); a raw string literal is left as it is (no escape exists
    in one), as is anything outside literals that would not compile either way."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        two = text[i : i + 2]
        if two == "//" or two == "/*":
            end = text.find("\n", i) if two == "//" else text.find("*/", i + 2)
            end = n if end < 0 else end + (0 if two == "//" else 2)
            out.append(terminal_safe(text[i:end]))
            i = end
        elif ch == '"' and _raw_prefix(text, i):  # R"delim( ... )delim": no escapes inside
            opening = text.find("(", i)
            closing = text.find(")" + text[i + 1 : opening] + '"', opening) if opening >= 0 else -1
            end = n if closing < 0 else closing + opening - i + 1
            out.append(text[i:end])
            i = end
        elif ch == '"' or (ch == "'" and not (i and text[i - 1].isdigit())):  # (1'000: a digit separator)
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(n, j + 1)
            out.append("".join(_octal(c) if _UNSAFE.fullmatch(c) else c for c in text[i:end]))
            i = end
        elif _UNSAFE.fullmatch(ch):
            out.append(" " if ch in "\f\v" else terminal_safe(ch))
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _octal(ch: str) -> str:
    return "".join(f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogatepass"))


def _raw_prefix(text: str, i: int) -> bool:
    """Whether the quote at `i` opens a raw string literal: R, u8R, uR, UR or LR right before it."""
    if i == 0 or text[i - 1] != "R":
        return False
    before = text[: i - 1]
    for prefix in ("u8", "u", "U", "L", ""):
        if before.endswith(prefix):
            rest = before[: len(before) - len(prefix)]
            if not rest or not (rest[-1].isalnum() or rest[-1] == "_"):
                return True
    return False
