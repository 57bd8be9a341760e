"""Files several processes write at once (engine/core/files.py): the measured-peaks cache, which one
GPU worker per GPU updates, and the app's config, state and drafts. On a 4-GPU host the workers
once renamed each other's fixed `peaks.tmp` away (FileNotFoundError, and the measurement failed)."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
from pathlib import Path

import pytest

from cuda_llm.engine.core.files import locked, update_atomically, write_atomically
from cuda_llm.engine.gpu import peaks
from tests.fakes.fake_gpu import FAKE_DEVICE, FAKE_PEAKS

WRITERS = 6
UPDATES_EACH = 25


def _add_keys(path: str, writer: int) -> None:
    def add(old: str | None, key: str) -> str:
        data = json.loads(old) if old else {}
        data[key] = writer
        return json.dumps(data)

    for n in range(UPDATES_EACH):
        update_atomically(Path(path), lambda old, n=n: add(old, f"{writer}-{n}"))


def _store_peaks(home: str, gpu: int) -> None:
    os.environ["CUDA_LLM_HOME"] = home
    info = dataclasses.replace(FAKE_DEVICE, index=gpu, uuid=f"GPU-{gpu}")
    for _ in range(UPDATES_EACH):
        peaks.store(info, dataclasses.replace(FAKE_PEAKS, gpu_uuid=f"GPU-{gpu}"))


def _run_all(target, args_of) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=args_of(w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS


def test_concurrent_updates_keep_every_change_and_leave_no_temporary_file(tmp_path):
    path = tmp_path / "shared.json"
    _run_all(_add_keys, lambda w: (str(path), w))
    data = json.loads(path.read_text())
    assert len(data) == WRITERS * UPDATES_EACH, "an update was lost"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json", "shared.json.lock"]


def test_the_workers_of_several_gpus_store_their_peaks_at_once(tmp_path):
    _run_all(_store_peaks, lambda w: (str(tmp_path), w))
    cache = tmp_path / "cache" / "peaks.json"
    data = json.loads(cache.read_text())
    assert sorted(key.split("|")[0] for key in data) == sorted(f"GPU-{w}" for w in range(WRITERS))
    assert not [p for p in cache.parent.iterdir() if p.name.endswith(".tmp")]


def test_peaks_store_keeps_other_gpus_and_survives_a_broken_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path))
    cache = tmp_path / "cache" / "peaks.json"
    cache.parent.mkdir(parents=True)
    for broken in ("{not json", "[1, 2]"):
        cache.write_text(broken)
        peaks.store(FAKE_DEVICE, FAKE_PEAKS)
        assert peaks.load_cached(FAKE_DEVICE) == FAKE_PEAKS
    other = dataclasses.replace(FAKE_DEVICE, uuid="GPU-other")
    peaks.store(other, dataclasses.replace(FAKE_PEAKS, gpu_uuid="GPU-other"))
    assert peaks.load_cached(FAKE_DEVICE) == FAKE_PEAKS
    assert peaks.load_cached(other).gpu_uuid == "GPU-other"


def test_a_write_replaces_the_file_whole_and_a_failed_one_leaves_it(tmp_path):
    path = tmp_path / "deep" / "config.toml"
    write_atomically(path, "a = 1\n")
    write_atomically(path, "b = 2\n")
    assert path.read_text() == "b = 2\n"

    def refuse(old: str | None) -> str:
        assert old == "b = 2\n"
        raise ValueError("no")

    with pytest.raises(ValueError):
        update_atomically(path, refuse)
    assert path.read_text() == "b = 2\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml", "config.toml.lock"]
    update_atomically(tmp_path / "new.json", lambda old: f"{old!r}")
    assert (tmp_path / "new.json").read_text() == "None"


def test_a_write_that_cannot_finish_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "state.toml"
    path.write_text("old")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError, match="No space"):
        write_atomically(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.toml"]


def test_the_lock_is_exclusive(tmp_path):
    import fcntl

    path = tmp_path / "x.json"
    with locked(path), open(tmp_path / "x.json.lock") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(tmp_path / "x.json.lock") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released after the block
