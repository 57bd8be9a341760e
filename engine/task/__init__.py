"""Tasks: a folder with task.toml, reference.py and baseline.cu/.json (DESIGN.md section 3)."""

from engine.task.library import TaskLibrary
from engine.task.loader import load_task
from engine.task.model import BufferSpec, Roofline, ScalarSpec, SizeCase, Task, Tolerance

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
