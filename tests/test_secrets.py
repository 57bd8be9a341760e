"""engine.secrets: the GPU worker, which runs model-written code, starts without credentials."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cuda_llm.engine.core.secrets import is_secret_name, without_secrets


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "MY_APIKEY", "api_key",
    ],
)  # fmt: skip
def test_credentials_are_recognised(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_LLM_HOME", "PYTHONPATH", "OLLAMA_HOST",
        "OPENAI_BASE_URL", "TOKENIZERS_PARALLELISM", "MONKEY", "KEYBOARD", "HOME", "NVIDIA_VISIBLE_DEVICES",
    ],
)  # fmt: skip
def test_what_a_worker_needs_stays(name):
    assert not is_secret_name(name)


def test_the_gpu_worker_environment_has_no_key(monkeypatch):
    """What engine/gpu/client.py starts the worker with."""
    import os

    monkeypatch.setenv("OPENAI_API_KEY", "sk-marker")
    env = without_secrets(os.environ)
    assert "OPENAI_API_KEY" not in env and "sk-marker" not in "".join(env.values())
    assert env.get("PATH") == os.environ.get("PATH")


async def test_the_gpu_worker_is_started_without_the_key(monkeypatch, tmp_path):
    from cuda_llm.engine.gpu import client

    monkeypatch.setenv("OPENAI_API_KEY", "sk-marker")
    seen = {}

    async def capture(*args, env=None, **kwargs):
        seen["env"] = env
        raise OSError("captured; not started")

    monkeypatch.setattr(client.asyncio, "create_subprocess_exec", capture)
    with pytest.raises(OSError, match="captured"):
        await client.GpuWorker(log_dir=tmp_path)._spawn()
    assert "OPENAI_API_KEY" not in seen["env"] and "PYTHONPATH" in seen["env"]


def test_the_app_starts_multiprocessing_s_resource_tracker_without_the_key(tmp_path):
    """The TUI starts the tracker itself once its first frame is drawn, with the real stderr (not
    Textual's capture); the tracker, a child of the application for as long as it runs, must not hold
    the model server's key."""
    code = (
        "import asyncio\n"
        "from multiprocessing import resource_tracker as rt\n"
        "from pathlib import Path\n"
        "from cuda_llm.app.app import CudaLlmApp\n"
        f"app = CudaLlmApp(config_path=Path({str(tmp_path / 'config.toml')!r}), poll_telemetry=False)\n"
        "async def first_frame():\n"
        "    async with app.run_test() as pilot:\n"
        "        await pilot.pause()\n"
        "        assert rt._resource_tracker._pid is not None, 'no tracker once the first frame is drawn'\n"
        "asyncio.run(first_frame())\n"
        "import time\n"
        "proc = f'/proc/{rt._resource_tracker._pid}'\n"
        # multiprocessing returns once the tracker is forked, not once it runs: until its exec is
        # done its command line (and environment) read empty
        "deadline = time.monotonic() + 60\n"
        "while b'resource_tracker' not in open(proc + '/cmdline', 'rb').read() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "env = open(proc + '/environ', 'rb').read()\n"
        "print('key' if b'OPENAI_API_KEY=' in env else 'no key', 'HOME=' in env.decode(errors='replace'))\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-marker", "CUDA_LLM_HOME": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["no", "key", "True"], done.stdout  # the rest of the environment is there
