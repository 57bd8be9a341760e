"""Where tasks are found: the built-in library, the user's task folder, and CUDA_LLM_TASK_PATH."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from cuda_llm.engine.core.errors import TaskFileError, UnknownTaskError, UserError
from cuda_llm.engine.core.paths import user_data_dir
from cuda_llm.engine.task.loader import TASK_FILE, load_task
from cuda_llm.engine.task.model import Task


def builtin_tasks_dir() -> Path:
    return Path(str(resources.files("cuda_llm.tasks")))


def user_tasks_dir() -> Path:
    return user_data_dir() / "tasks"


def default_search_path() -> tuple[Path, ...]:
    extra = [Path(p) for p in os.environ.get("CUDA_LLM_TASK_PATH", "").split(os.pathsep) if p]
    return (*extra, user_tasks_dir(), builtin_tasks_dir())


@dataclass
class TaskLibrary:
    """Tasks by name. An earlier folder on the search path shadows a later one of the same name."""

    search_path: tuple[Path, ...] = field(default_factory=default_search_path)

    def folders(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        for root in self.search_path:
            if not root.is_dir():
                continue
            for child in sorted(root.iterdir()):
                if (child / TASK_FILE).is_file() and child.name not in found:
                    found[child.name] = child
        return found

    def names(self) -> list[str]:
        return sorted(self.folders())

    def get(self, name_or_path: str) -> Task:
        """A task by name, or by the path of its folder."""
        path = Path(name_or_path)
        if (path / TASK_FILE).is_file():
            return load_task(path)
        folders = self.folders()
        if name_or_path not in folders:
            if path.is_dir():
                raise UserError(f"{path} is a folder without a {TASK_FILE}: not a task (`cuda-llm tasks` lists them)")
            raise UnknownTaskError(name_or_path, sorted(folders))
        return load_task(folders[name_or_path])

    def load_all(self) -> Iterator[Task | TaskFileError]:
        """Every task, or the error that stops it loading (a listing shows both)."""
        for folder in self.folders().values():
            try:
                yield load_task(folder)
            except TaskFileError as exc:
                yield exc
