"""CUDA syntax highlighting for TextArea: the tree-sitter CUDA grammar with the C, C++ and CUDA
highlight queries, plus cuda.scm for qualifiers, index built-ins and intrinsics.

The tree-sitter-cpp grammar alone mis-parses `__global__`; the CUDA grammar does not. Without the
grammar packages the editor still works, unhighlighted.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from textual.widgets import TextArea

if TYPE_CHECKING:
    from tree_sitter import Language

LANGUAGE = "cuda"
_QUERY_PACKAGES = ("tree_sitter_c", "tree_sitter_cpp", "tree_sitter_cuda")


@cache
def highlight_query() -> str | None:
    try:
        parts = [(files(m) / "queries" / "highlights.scm").read_text() for m in _QUERY_PACKAGES]
    except (ModuleNotFoundError, OSError):
        return None
    parts.append((Path(__file__).parent / "cuda.scm").read_text())
    # Textual's themes style `keyword`, not nvim-treesitter's finer `keyword.modifier`.
    return "\n".join(parts).replace("@keyword.modifier", "@keyword")


@cache
def _language() -> Language | None:  # imported lazily: the grammar is optional
    try:
        import tree_sitter_cuda
        from tree_sitter import Language
    except ModuleNotFoundError:
        return None
    return Language(tree_sitter_cuda.language())


def release(area: TextArea) -> None:
    """Let the area's document go. A syntax-aware document and its tree-sitter tree hold each other
    (the tree keeps the document's read callback), a cycle through a C object that the garbage
    collector cannot see into: without this, every document a highlighted TextArea ever showed stays
    in memory (measured: hundreds of MiB over a long session)."""
    document = area.document
    if getattr(document, "_syntax_tree", None) is not None:
        document._syntax_tree = None  # type: ignore[attr-defined]  # textual's private tree cache


def load_source(area: TextArea, text: str) -> None:
    """Show `text` in `area` as `area.load_text(text)` does (undo history empty, cursor at the top),
    but a highlighted area keeps its document and has the text edited into it: load_text builds a new
    document and compiles the highlight query for it again (the C, C++ and CUDA queries together: 0.1-0.3
    s on the event loop on the 2-core VM, for every kernel the pane shows, a frame held back that long).
    A plain-text area just loads it (nothing to compile)."""
    old = area.document
    if getattr(old, "_syntax_tree", None) is None:
        area.load_text(text)
        return
    area.replace(text, (0, 0), old.end, maintain_selection_offset=False)
    area.history.clear()  # nothing to undo in a shown kernel; and no old text kept
    area.move_cursor((0, 0))


def use_cuda(area: TextArea) -> bool:
    """Register and select CUDA highlighting on `area`; False when the grammar is not installed."""
    language, query = _language(), highlight_query()
    if language is None or query is None:
        return False
    area.register_language(LANGUAGE, language, query)
    area.language = LANGUAGE
    return True
