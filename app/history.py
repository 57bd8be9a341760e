"""The message history: every notification the app showed, with its time and severity.

Toasts fade after a few seconds (several at once while the app starts); the history keeps each one
for the messages screen (M), so a config warning or "nothing was submitted" can be read later.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.errors import MarkupError
from rich.text import Text

# A long session says a few hundred things; past this the oldest go (a line of memory each).
MAX_MESSAGES = 2000


@dataclass(frozen=True)
class Entry:
    at: float  # time.time()
    severity: str  # "information" | "warning" | "error"
    text: str  # plain text (markup resolved)

    @property
    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.at))


@dataclass
class MessageHistory:
    entries: list[Entry] = field(default_factory=list)

    def add(self, message: str, severity: str = "information", *, markup: bool = True) -> Entry:
        text = message
        if markup:
            try:
                text = Text.from_markup(message).plain
            except MarkupError:
                text = message
        entry = Entry(time.time(), severity, text)
        self.entries.append(entry)
        del self.entries[:-MAX_MESSAGES]
        return entry

    def __len__(self) -> int:
        return len(self.entries)
