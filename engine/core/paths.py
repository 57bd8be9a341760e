"""The user's data, config and cache folders (XDG on Linux), overridable for tests and CI."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def user_data_dir() -> Path:
    """Sessions database and user tasks. CUDA_LLM_HOME moves data, config and cache together."""
    home = os.environ.get("CUDA_LLM_HOME")
    return Path(home) / "data" if home else _xdg("XDG_DATA_HOME", ".local/share") / "cuda-llm"


def user_config_dir() -> Path:
    home = os.environ.get("CUDA_LLM_HOME")
    return Path(home) / "config" if home else _xdg("XDG_CONFIG_HOME", ".config") / "cuda-llm"


def user_cache_dir() -> Path:
    """Measured GPU peaks, reference outputs, extracted NVRTC headers."""
    home = os.environ.get("CUDA_LLM_HOME")
    return Path(home) / "cache" if home else _xdg("XDG_CACHE_HOME", ".cache") / "cuda-llm"
