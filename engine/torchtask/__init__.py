"""Tasks from PyTorch modules (`cuda-llm tasks import FILE.py`).

The field's problem format is a Python file with `Model(nn.Module)`, `get_inputs()` and
`get_init_inputs()`. Importing one runs the user's code, so it happens in a child process with a
time limit (probe.py, driven by inspect.py); writer.py turns what the child found into a task folder
whose reference is the module in float64 (runtime.py) and whose baseline is PyTorch eager, timed by
our own profiler in the GPU worker (eager.py). training.py states how a module runs (as the file
builds it: in training mode) and which layers cannot be judged that way; coverage.py imports every
file of folders, for bench/import_coverage.py.

PyTorch is an optional extra: nothing here imports it at module level, and only the child, the
reference of an imported task and the GPU worker's eager program ever load it.
"""

from cuda_llm.engine.core.extras import install_hint

INSTALL_HINT = install_hint("torch")
