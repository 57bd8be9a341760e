"""Whether a copy through OSC 52 can reach the person's clipboard.

The TUI copies by writing OSC 52 to the terminal, which reaches the person's own clipboard over SSH.
Inside tmux it does only when tmux passes it on: `set-clipboard on`. tmux's default, `external`,
drops what applications send, so a copy would say "copied" and copy nothing; this says why instead.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

# tmux answers a show-options at once; a wedged tmux server must not hold the key press longer.
TMUX_ANSWER_S = 1.0


def osc52_blocked(env: Mapping[str, str] = os.environ) -> str | None:
    """One line saying why a copy cannot reach the clipboard and what to do, or None when it can
    (or when it cannot be told: not in tmux, no tmux command, no answer)."""
    if not env.get("TMUX"):
        return None
    try:
        done = subprocess.run(
            ["tmux", "show-options", "-gv", "set-clipboard"],
            capture_output=True,
            text=True,
            timeout=TMUX_ANSWER_S,
            env=dict(env),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    if done.returncode != 0 or not value or value == "on":
        return None
    return (
        f"tmux's set-clipboard is '{value}': the copy does not reach your clipboard; "
        "add `set -g set-clipboard on` to ~/.tmux.conf (then `tmux source ~/.tmux.conf`)"
    )
