"""The package's surface: importing it loads no NVRTC, and every exported name exists."""

from __future__ import annotations

import subprocess
import sys

import cuda_llm.engine.compile


def test_importing_the_package_loads_no_nvrtc() -> None:
    code = (
        "import sys, cuda_llm.engine.compile, cuda_llm.engine.compile.result\n"
        "loaded = [m for m in ('cuda.bindings.nvrtc', 'cuda.bindings', 'numpy') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_exported_name_exists() -> None:
    missing = [name for name in cuda_llm.engine.compile.__all__ if not hasattr(cuda_llm.engine.compile, name)]
    assert missing == []
    assert {"CompilerPool", "compile_once", "CompileResult", "precision_hints"} <= set(cuda_llm.engine.compile.__all__)
