"""engine.secrets: the GPU worker, which runs model-written code, starts without credentials."""

from __future__ import annotations

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
