"""The TUI's themes: a dark default, a light one and a high-contrast one.

Each is a Textual `Theme` (the colours every widget's CSS refers to through variables such as
$primary) plus the project's own variables (the status colours of candidates, the plot's lines),
and a matching `TextAreaTheme` for CUDA source. colors.tcss, beside this file, maps the variables
onto the panes. Built-in Textual themes stay selectable; the project's variables fall back to the
defaults below for them.
"""

from __future__ import annotations

from pathlib import Path

from rich.style import Style
from textual.theme import Theme
from textual.widgets.text_area import TextAreaTheme

THEMES_DIR = Path(__file__).parent
COLORS_TCSS = THEMES_DIR / "colors.tcss"
DEFAULT_THEME = "cuda-dark"

# The project's own CSS variables, with values that read well on dark and light backgrounds alike
# (used as they are by Textual's built-in themes).
VARIABLE_DEFAULTS: dict[str, str] = {
    "status-correct": "#3fb950",
    "status-best": "#e3b341",
    "status-wrong": "#f85149",
    "status-crashed": "#db61a2",
    "status-pending": "#8b949e",
    "status-compiled": "#58a6ff",
    "plot-candidate": "#8b949e",
    "plot-best": "#3fb950",
    "plot-baseline": "#f0883e",
    "plot-floor": "#58a6ff",
    "plot-library": "#d2a8ff",
}

DARK = Theme(
    name="cuda-dark",
    primary="#76b900",  # the accelerator's green
    secondary="#58a6ff",
    accent="#e3b341",
    warning="#d29922",
    error="#f85149",
    success="#3fb950",
    foreground="#e6edf3",
    background="#0d1117",
    surface="#161b22",
    panel="#21262d",
    dark=True,
    variables=dict(VARIABLE_DEFAULTS),
)

LIGHT = Theme(
    name="cuda-light",
    primary="#3d7a00",
    secondary="#0969da",
    accent="#9a6700",
    warning="#9a6700",
    error="#cf222e",
    success="#1a7f37",
    foreground="#1f2328",
    background="#ffffff",
    surface="#f6f8fa",
    panel="#eaeef2",
    dark=False,
    variables={
        "status-correct": "#1a7f37",
        "status-best": "#9a6700",
        "status-wrong": "#cf222e",
        "status-crashed": "#a0116b",
        "status-pending": "#57606a",
        "status-compiled": "#0969da",
        "plot-candidate": "#57606a",
        "plot-best": "#1a7f37",
        "plot-baseline": "#bc4c00",
        "plot-floor": "#0969da",
        "plot-library": "#8250df",
    },
)

# Pure black and white with saturated, widely separated hues: readable on poor projectors, in
# 256-colour terminals, and with reduced colour vision (shapes and words carry the state too).
CONTRAST = Theme(
    name="cuda-contrast",
    primary="#ffff00",
    secondary="#00ffff",
    accent="#ff00ff",
    warning="#ffff00",
    error="#ff5555",
    success="#00ff00",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#1c1c1c",
    dark=True,
    luminosity_spread=0.3,
    text_alpha=1.0,
    variables={
        "status-correct": "#00ff00",
        "status-best": "#ffff00",
        "status-wrong": "#ff5555",
        "status-crashed": "#ff00ff",
        "status-pending": "#c0c0c0",
        "status-compiled": "#00ffff",
        "plot-candidate": "#ffffff",
        "plot-best": "#00ff00",
        "plot-baseline": "#ffff00",
        "plot-floor": "#00ffff",
        "plot-library": "#ff00ff",
        "border": "#ffffff",
        "border-blurred": "#c0c0c0",
        "footer-key-foreground": "#ffff00",
    },
)

THEMES: tuple[Theme, ...] = (DARK, LIGHT, CONTRAST)
THEME_TITLES = {"cuda-dark": "dark", "cuda-light": "light", "cuda-contrast": "high contrast"}

# ---- CUDA source colours -----------------------------------------------------------------------
# The capture names the CUDA highlight query adds (app/widgets/cuda.scm): qualifiers such as
# __global__ and __shared__, the built-in index variables, and intrinsics (__syncthreads, atomics).
CUDA_CAPTURES = ("cuda.qualifier", "cuda.builtin", "cuda.intrinsic")


def _code_theme(name: str, base: str, extra: dict[str, Style], **changes: Style) -> TextAreaTheme:
    source = TextAreaTheme.get_builtin_theme(base)
    assert source is not None, base
    styles = dict(source.syntax_styles) | extra
    fields = {
        "base_style": source.base_style,
        "gutter_style": source.gutter_style,
        "cursor_style": source.cursor_style,
        "cursor_line_style": source.cursor_line_style,
        "cursor_line_gutter_style": source.cursor_line_gutter_style,
        "bracket_matching_style": source.bracket_matching_style,
        "selection_style": source.selection_style,
    } | changes
    return TextAreaTheme(name=name, syntax_styles=styles, **fields)


CODE_DARK = _code_theme(
    "cuda-dark-code",
    "vscode_dark",
    {
        "cuda.qualifier": Style(color="#76b900", bold=True),
        "cuda.builtin": Style(color="#4fc1ff"),
        "cuda.intrinsic": Style(color="#e3b341", bold=True),
    },
    base_style=Style(color="#e6edf3", bgcolor="#0d1117"),
    gutter_style=Style(color="#6e7681", bgcolor="#0d1117"),
)
CODE_LIGHT = _code_theme(
    "cuda-light-code",
    "github_light",
    {
        "cuda.qualifier": Style(color="#3d7a00", bold=True),
        "cuda.builtin": Style(color="#0550ae"),
        "cuda.intrinsic": Style(color="#953800", bold=True),
        "type": Style(color="#6639ba"),  # github_light's grey types vanish on white
    },
)
CODE_CONTRAST = _code_theme(
    "cuda-contrast-code",
    "vscode_dark",
    {
        "cuda.qualifier": Style(color="#00ff00", bold=True),
        "cuda.builtin": Style(color="#00ffff", bold=True),
        "cuda.intrinsic": Style(color="#ffff00", bold=True),
        "comment": Style(color="#c0c0c0", italic=True),
        "keyword": Style(color="#ff00ff", bold=True),
        "type": Style(color="#ffff00"),
        "string": Style(color="#ff8700"),
        "number": Style(color="#00ffff"),
    },
    base_style=Style(color="#ffffff", bgcolor="#000000"),
    gutter_style=Style(color="#c0c0c0", bgcolor="#000000"),
    cursor_line_style=Style(bgcolor="#303030"),
)
CODE_THEMES: tuple[TextAreaTheme, ...] = (CODE_DARK, CODE_LIGHT, CODE_CONTRAST)


def code_theme_for(theme_name: str, dark: bool) -> str:
    """The TextAreaTheme to use for CUDA source under an app theme (built-in ones by darkness)."""
    own = f"{theme_name}-code"
    if any(t.name == own for t in CODE_THEMES):
        return own
    return CODE_DARK.name if dark else CODE_LIGHT.name
