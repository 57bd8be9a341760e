"""A task folder as it travels to the nodes: its files' bytes, keyed by their content.

The driver packs the folder once per task and puts it into Ray's object store; each node unpacks it
once into its cache and loads the task from there. The user's own tasks travel exactly like the
built-in ones, and no node needs the driver's filesystem.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_llm.engine.core.errors import UserError

# Python's byte-code caches and editor droppings are not part of a task.
_SKIPPED_PREFIXES = (".", "__pycache__")


@dataclass(frozen=True)
class TaskBundle:
    key: str  # hash of the names and contents: equal bundles unpack to the same folder
    folder_name: str
    files: tuple[tuple[str, bytes], ...]

    @property
    def size(self) -> int:
        return sum(len(data) for _name, data in self.files)


@dataclass(frozen=True)
class ShippedTask:
    """What a request names its task by: the bundle's key and where to fetch it from if the node
    has not unpacked it yet. `ref` holds the object-store reference inside a tuple so that Ray
    passes it as a reference (fetched once per node) instead of resolving it with every request."""

    key: str
    name: str
    fingerprint: str
    ref: tuple[Any, ...]


def _safe_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def pack_task(folder: Path, max_bytes: int) -> TaskBundle:
    """The folder's files (its top level, as the task loader reads it), refused over `max_bytes`."""
    files = []
    total = 0
    for path in sorted(folder.iterdir()):
        if path.name.startswith(_SKIPPED_PREFIXES) or not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        if total > max_bytes:
            raise UserError(
                f"task folder {folder} holds more than {max_bytes >> 20} MiB; a task is sent to every node "
                "of the cluster, so keep only its task.toml, reference, baseline and plan there"
            )
        files.append((path.name, data))
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return TaskBundle(digest.hexdigest()[:24], folder.name, tuple(files))


def unpack_task(bundle: TaskBundle, root: Path) -> Path:
    """The bundle as a folder under `root` (written once: a later call finds it). Written beside
    and renamed into place, so a folder that exists is complete."""
    if not _safe_name(bundle.folder_name) or not all(_safe_name(name) for name, _ in bundle.files):
        raise ValueError("a task bundle named a file outside its folder")
    final = root / bundle.key
    folder = final / bundle.folder_name
    if folder.is_dir():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{bundle.key}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    (staging / bundle.folder_name).mkdir(parents=True)
    try:
        for name, data in bundle.files:
            (staging / bundle.folder_name / name).write_bytes(data)
        try:
            staging.rename(final)
        except OSError:
            if not folder.is_dir():  # not another actor of this node that got there first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
