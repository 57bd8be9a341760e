"""One GPU per xdist worker (tests/gpu_workers.py): which GPU each worker gets, and that a real
`pytest -n 2` run with it asked for gives each worker a GPU of its own before its tests start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gpu_workers
import pytest

TESTS = Path(__file__).resolve().parent


def probe_run(folder: Path, env: dict[str, str], workers: str) -> subprocess.CompletedProcess[str]:
    """pytest with this suite's conftest over the probe file in `folder`, in `workers` workers."""
    options = ["-p", "conftest", "-o", "addopts=", "-p", "no:cacheprovider", "-n", workers, "-v"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(folder), str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_visible_list_wins_over_the_host_count() -> None:
    assert gpu_workers.visible_gpus("3, 1", 8) == ["3", "1"]
    assert gpu_workers.visible_gpus(None, 2) == ["0", "1"]
    assert gpu_workers.visible_gpus("", 2) == ["0", "1"]


def test_each_worker_gets_its_own_gpu_and_one_too_many_is_refused() -> None:
    gpus = ["3", "1"]
    assert [gpu_workers.worker_gpu(w, gpus) for w in ("gw0", "gw1")] == ["3", "1"]
    with pytest.raises(gpu_workers.GpuWorkerError, match=r"gw2 has no GPU of its own \(2 visible: 3,1\)"):
        gpu_workers.worker_gpu("gw2", gpus)
    gpu_workers.check_workers(2, gpus)
    gpu_workers.check_workers(None, gpus)
    with pytest.raises(gpu_workers.GpuWorkerError):
        gpu_workers.check_workers(3, gpus)


def test_a_real_run_pins_each_worker_before_its_tests(tmp_path: Path) -> None:
    pins_dir = tmp_path / "pins"
    pins_dir.mkdir()
    (tmp_path / "test_probe.py").write_text(
        "import os, pathlib, pytest\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_probe(i):\n"
        f"    pins = pathlib.Path({str(pins_dir)!r})\n"
        "    (pins / f'{i}').write_text(os.environ['PYTEST_XDIST_WORKER'] + ' ' + os.environ['CUDA_VISIBLE_DEVICES'])\n"
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="5,7", PYTHONPATH=str(TESTS))
    env[gpu_workers.GPU_PER_WORKER] = "1"
    run = probe_run(tmp_path, env, "auto")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "created: 2/2 workers" in run.stdout, run.stdout
    pins = {tuple(f.read_text().split()) for f in pins_dir.iterdir()}
    assert len(list(pins_dir.iterdir())) == 6, run.stdout
    assert pins and pins <= {("gw0", "5"), ("gw1", "7")}, pins

    too_many = probe_run(tmp_path, env, "3")
    assert too_many.returncode == pytest.ExitCode.USAGE_ERROR, too_many.stdout + too_many.stderr
    assert "gw2 has no GPU of its own (2 visible: 5,7); run with -n 2" in too_many.stderr
