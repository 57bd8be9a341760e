"""The kernel pane's source view shows each kernel as a fresh load would (the text, the cursor at the
top, nothing to undo, highlighted) without compiling the highlight query again: that compile held
the event loop, and so every frame, resize included, 0.1-0.3 s for every kernel shown."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.document._syntax_aware_document import SyntaxAwareDocument
from textual.widgets import TextArea

from cuda_llm.app.widgets.cuda import load_source, use_cuda

KERNELS = (
    "__global__ void add(const float* a, float* c, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) c[i] = a[i];\n"
    "}\n",
    "// another\n__global__ void scale(float* x, float s) {\n    x[threadIdx.x] *= s;\n}\n",
)


class SourceApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TextArea.code_editor("", read_only=True, id="source", soft_wrap=False)


async def test_each_kernel_is_shown_fresh_without_compiling_the_query_again(monkeypatch):
    app = SourceApp()
    async with app.run_test(size=(80, 20)) as pilot:
        area = app.query_one(TextArea)
        if not use_cuda(area):
            pytest.skip("the CUDA grammar is not installed")
        compiled: list[str] = []
        prepare = SyntaxAwareDocument.prepare_query

        def counted(self, query):
            compiled.append(query)
            return prepare(self, query)

        monkeypatch.setattr(SyntaxAwareDocument, "prepare_query", counted)
        for source in (*KERNELS, KERNELS[0]):
            area.move_cursor((2, 5))  # the person had moved in the last one
            load_source(area, source)
            await pilot.pause()
            assert area.text == source
            assert area.cursor_location == (0, 0)
            assert area.scroll_offset == (0, 0)
            assert not area.history.undo_stack, "a shown kernel has nothing to undo"
            # highlighted from this text's tree: `__global__` where it stands in this kernel (row 0, then 1)
            row = next(i for i, line in enumerate(source.splitlines()) if "__global__" in line)
            column = source.splitlines()[row].index("__global__")
            assert any(start == column for start, _end, _name in area._highlights[row]), area._highlights
        assert compiled == [], f"the highlight query was compiled {len(compiled)} more times"
