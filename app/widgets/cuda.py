"""CUDA syntax highlighting for TextArea: the tree-sitter CUDA grammar with the C, C++ and CUDA
highlight queries, plus cuda.scm for qualifiers, index built-ins and intrinsics.

The tree-sitter-cpp grammar alone mis-parses `__global__`; the CUDA grammar does not. Without the
grammar packages the editor still works, unhighlighted.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from textual.widgets import TextArea

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
def _language():  # a tree_sitter.Language, imported lazily
    try:
        import tree_sitter_cuda
        from tree_sitter import Language
    except ModuleNotFoundError:
        return None
    return Language(tree_sitter_cuda.language())


def use_cuda(area: TextArea) -> bool:
    """Register and select CUDA highlighting on `area`; False when the grammar is not installed."""
    language, query = _language(), highlight_query()
    if language is None or query is None:
        return False
    area.register_language(LANGUAGE, language, query)
    area.language = LANGUAGE
    return True
