"""What the launcher hands the app from the command line as a user types it.

Which GPU the telemetry bar reads: `--gpus` is text ("0,1", a GPU model with --cluster, or absent
for every GPU); the bar needs one local device index. Before this was translated, the absent flag
reached NVML as index None and the bar said "no NVML device" on every GPU machine where the TUI was
started without --gpus. And the loop's flags as the start screen's fields: `-K 0 --target-roofline
0` (never stop early) used to be dropped there, so the session stopped at 90% of the roofline
anyway."""

from __future__ import annotations

import pytest

from cuda_llm.app import app as app_module
from cuda_llm.app.launcher import main
from cuda_llm.app.widgets.telemetry import NvmlSampler, telemetry_gpu


@pytest.mark.parametrize(
    ("gpus", "cluster", "expected"),
    [(None, None, 0), ("all", None, 0), ("1", None, 1), ("2,0", None, 2), (" 3 , 1", None, 3), ("H100", None, None),
     (None, "ray://head:10001", None), ("0", "auto", None)],
)  # fmt: skip
def test_the_bar_reads_the_first_local_gpu_the_session_judges_on(gpus, cluster, expected) -> None:
    assert telemetry_gpu(gpus, cluster) == expected


def launched(monkeypatch, tmp_path, argv: list[str]) -> app_module.CudaLlmApp:
    """The app the launcher builds for `cuda-llm ARGV`, not run."""
    built: list[app_module.CudaLlmApp] = []
    monkeypatch.setattr(app_module.CudaLlmApp, "run", lambda self, *a, **k: built.append(self))
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path))
    (tmp_path / "tui.toml").write_text("")  # a --config that names no file is refused (issue 47)
    assert main([*argv, "--db", str(tmp_path / "s.db"), "--config", str(tmp_path / "tui.toml")]) == 0
    (app,) = built
    return app


@pytest.mark.parametrize(("argv", "expected"), [([], 0), (["--gpus", "1,0"], 1), (["--cluster", "auto"], None)])
def test_the_launcher_gives_the_bar_a_device_index(monkeypatch, tmp_path, argv, expected) -> None:
    app = launched(monkeypatch, tmp_path, argv)
    if expected is None:
        assert app.sampler is None and "Ray cluster" in app.telemetry_absent
    else:
        assert isinstance(app.sampler, NvmlSampler) and app.sampler.index == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-N", "2", "-D", "3", "-R", "1", "-K", "0", "--target-roofline", "0"], (2, 3, 1, 0, 0.0)),
        (["-K", "5", "--target-roofline", "0.75"], (4, 5, 3, 5, 0.75)),
        ([], (4, 5, 3, 3, 0.9)),
    ],
)
def test_the_loop_flags_fill_the_start_screen(monkeypatch, tmp_path, argv, expected) -> None:
    c = launched(monkeypatch, tmp_path, argv).config
    assert (c.candidates, c.rounds, c.repairs, c.patience, c.target_roofline) == expected
