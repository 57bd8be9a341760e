"""The TUI config: round trip through the tiny TOML writer, endpoints, and broken files."""

from __future__ import annotations

import tomllib

from cuda_llm.app.config import AppConfig, Endpoint, load_config, save_config, to_toml


def test_round_trip_with_endpoints_and_awkward_strings(tmp_path):
    config = AppConfig(
        task="vector_add",
        model='openai:Qwen/Qwen2.5 "coder"\\32B',
        endpoint="vllm box",
        candidates=6,
        rounds=9,
        target_roofline=0.75,
        auto_accept=True,
        theme="cuda-light",
        endpoints=(
            Endpoint("vllm box", "openai", "http://gpu-box:8000/v1", "Qwen/Qwen2.5-Coder-32B\tInstruct"),
            Endpoint("lab", "ollama", "http://lab:11434"),
        ),
    )
    path = tmp_path / "tui.toml"
    assert save_config(config, path) is None
    tomllib.loads(path.read_text())  # the writer's output is TOML
    loaded = load_config(path)
    assert loaded.warning is None and loaded.config == config


def test_missing_file_gives_the_defaults(tmp_path):
    loaded = load_config(tmp_path / "none.toml")
    assert loaded.config == AppConfig() and loaded.warning is None


def test_malformed_file_is_one_line_and_the_defaults(tmp_path):
    path = tmp_path / "tui.toml"
    for text, why in (
        ("task = [unclosed", "not a usable config"),
        ("candidates = 'four'", "candidates must be int"),
        ('[[endpoints]]\nname = "x"\nkind = "grpc"\nurl = "u"', "kind must be one of"),
        ("\xff\xfe", "not a usable config"),
    ):
        path.write_bytes(text.encode("latin-1"))
        loaded = load_config(path)
        assert loaded.config == AppConfig()
        assert loaded.warning is not None and "\n" not in loaded.warning and why in loaded.warning, loaded.warning


def test_none_values_are_left_out():
    keys = [line.split(" = ")[0] for line in to_toml(AppConfig()).splitlines() if " = " in line]
    assert "task" not in keys and "model" not in keys and "theme" in keys


def test_unwritable_config_is_a_line_not_an_exception(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert "cannot save the config" in (save_config(AppConfig(), blocker / "tui.toml") or "")
