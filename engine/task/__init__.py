"""Tasks: a folder with task.toml, reference.py and baseline.cu/.json (docs/architecture.md, "Tasks")."""

from cuda_llm.engine.task.library import TaskLibrary
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.model import BufferSpec, Roofline, ScalarSpec, SizeCase, Task, Tolerance

__all__ = [
    "BufferSpec",
    "Roofline",
    "ScalarSpec",
    "SizeCase",
    "Task",
    "TaskLibrary",
    "Tolerance",
    "load_task",
]
