"""Shared fixtures. The loopback model servers live in tests/llm_servers.py (see its docstring);
import its helpers with `from llm_servers import Reply` (pytest puts tests/ on sys.path).

The suite never sees the user's own data: before anything is collected, CUDA_LLM_HOME points at a
fresh temporary folder (data, config and cache together) and CUDA_LLM_TASK_PATH is cleared, so a
task the user scaffolded, a broken task.toml in their folder, their sessions database or their TUI
config change no count and fail no test. Child processes the tests start inherit the same
environment. With CUDA_LLM_TEST_KEEP_HOME set, only the cache (extracted NVRTC headers, measured
peaks) is shared with the user's, to save the extraction between runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from multiprocessing import resource_tracker
from pathlib import Path

import gpu_workers
import pytest
from llm_servers import LoopbackLLMServer, closed_port_url

# Fault rows for docs/reliability.md: the `fault` marker and the `observed` fixture.
pytest_plugins = ["faultlog"]

# The variables that lead the engine to the user's folders (engine/core/paths.py, engine/task/library.py).
ISOLATED_VARIABLES = ("CUDA_LLM_HOME", "CUDA_LLM_TASK_PATH")
_saved: dict[str, str | None] = {}
_made: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """Runs before collection: parametrised tests that list the task library see the built-in one."""
    from cuda_llm.engine.core.paths import user_cache_dir
    from cuda_llm.engine.core.secrets import secrets_hidden

    if gpu_workers.wanted():
        gpus = gpu_workers.visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), gpu_workers.host_gpu_count())
        # xdist's own mark of a worker: PYTEST_XDIST_WORKER may be inherited from an outer run.
        workerinput = getattr(config, "workerinput", None)
        worker = workerinput["workerid"] if workerinput else None
        try:
            if worker:  # before anything in this worker initialises CUDA
                os.environ["CUDA_VISIBLE_DEVICES"] = gpu_workers.worker_gpu(worker, gpus)
            else:  # the controller: refuse a -n that would put two workers on one GPU
                gpu_workers.check_workers(getattr(config.option, "numprocesses", None), gpus)
        except gpu_workers.GpuWorkerError as exc:
            raise pytest.UsageError(str(exc)) from None

    real_cache = user_cache_dir()
    home = Path(tempfile.mkdtemp(prefix="cuda-llm-test-home-"))
    _made.append(home)
    for name in ISOLATED_VARIABLES:
        _saved[name] = os.environ.pop(name, None)
    if os.environ.get("CUDA_LLM_TEST_KEEP_HOME"):
        real_cache.mkdir(parents=True, exist_ok=True)
        (home / "cache").symlink_to(real_cache, target_is_directory=True)
    os.environ["CUDA_LLM_HOME"] = str(home)
    # multiprocessing's resource tracker is one per process, started by the first child that needs it
    # with the environment of that moment, and it lives as long as the test process. Started here
    # without credentials, so no test that sets a key and starts a child on purpose (the compiler
    # jail's, tests/compile/jail.py) leaves it holding that key for the tests after it.
    with secrets_hidden():
        resource_tracker.ensure_running()


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    for path in _made:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def llm_server() -> Iterator[LoopbackLLMServer]:
    """A loopback server speaking the Ollama and OpenAI chat protocols, stopped at teardown."""
    with LoopbackLLMServer() as server:
        yield server


@pytest.fixture
def refused_url() -> str:
    """A loopback URL on which nothing listens: connecting is refused."""
    return closed_port_url()


# ---- parallel workers (pytest-xdist, `-n auto --dist loadgroup` in pyproject.toml) --------------
# Tests that share something heavy run on one worker, one after another: module-scoped fixtures
# that would otherwise be built once per worker (a venv with the package installed, the sandboxed
# compilers, the host-safety module's judged corpus: 190 s on the 2-core machine, which a second
# worker built again). The hook runs before pytest-xdist's own (tryfirst), which reads the marks.
# The Ray cluster tests are not grouped: in one worker their actors were not placed within
# ClusterSettings.placement_grace_s under load (tried 2026-11-27), and spread they hold up.
SERIAL_GROUPS = {
    "tests/tui/test_tmux.py": "tmux",
    "tests/test_packaging.py": "packaging",
    "tests/test_bench.py": "bench",
    "tests/compile/test_sandbox.py": "sandbox",
    "tests/compile/test_pool.py": "compiler-pool",
    "tests/compile/test_header_macros.py": "header-macros",
    "tests/faults/test_host_safety.py": "host-safety",
    "tests/judge/test_metrics.py": "metrics",
    # Every example module imported once (the `imported` fixture: each import starts PyTorch in a
    # child process), by the files that use it; the other torch tests spread over the workers.
    "tests/torchtask/test_written_task.py": "torchtask-examples",
    "tests/torchtask/test_fast_p.py": "torchtask-examples",
    "tests/torchtask/test_gpu_import.py": "torchtask-examples",
}
# Files of long single tests (whole sessions, PyTorch children: up to a minute each under load),
# collected late, run before the others: the scheduler hands out the groups above first (the most
# tests first), then single tests in collection order, and a long test handed out last keeps one
# worker busy while the others have nothing left. (tests/cluster is collected early already.)
SLOW_FIRST = (
    "tests/torchtask/test_import_refusals.py",
    "tests/test_cli_messages.py",
    "tests/torchtask/",
    "tests/fsr/test_loop.py",
)
_REPO = Path(__file__).resolve().parent.parent


def _where(item: pytest.Item) -> str | None:
    path = item.path.resolve()
    if not path.is_relative_to(_REPO):  # a test file of a test's own pytest run
        return None
    return path.relative_to(_REPO).as_posix()


def _rank(item: pytest.Item) -> int:
    where = _where(item)
    if where is None:
        return len(SLOW_FIRST)
    return next((n for n, prefix in enumerate(SLOW_FIRST) if where.startswith(prefix)), len(SLOW_FIRST))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = _where(item)
        if where is None:
            continue
        group = next((g for prefix, g in SERIAL_GROUPS.items() if where.startswith(prefix)), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # A stable sort: each file's tests stay together and in their order (module fixtures built once).
    items.sort(key=_rank)


# `-n auto` without a GPU: one worker per core (pytest-xdist's own count, which
# PYTEST_XDIST_AUTO_NUM_WORKERS overrides). More workers than cores take a larger share of a machine
# that other work keeps busy: tests/fsr/test_loop.py and test_repeats.py on the 2-core machine under a
# load average of 13-23 (others' work), alternated, took 169 and 109 s on two workers, 80 and 137 s on
# four. Not the default: four workers run up to four Ray clusters at once (tests/cluster), and under
# that load 3 of its 35 tests failed with actors not started in time, as some did on two workers
# (docs/testing.md, "How long the suite takes").
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker per core, but none (a serial run) where a GPU is there: the GPU tests
    time kernels, and two workers sharing the device would time each other. With one GPU per worker
    asked for (tests/gpu_workers.py), one worker per visible GPU."""
    from cuda_llm.engine.judge.judge_environment import gpu_unavailable_reason

    if gpu_workers.wanted():
        return len(gpu_workers.visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), gpu_workers.host_gpu_count()))
    if gpu_unavailable_reason() is None:
        return 0
    return None
