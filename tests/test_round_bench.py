"""bench/round_gpus.py and bench/round_tasks.py on the fake GPU: the rounds run through the real
judge and the real GPU pool (its workers replaced by fakes), each configuration's validations and
timings land on all of its GPUs, and the JSON carries the figures and ratios. No wall clock is
asserted (speed targets are for the GPU host)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
from fakes.fake_gpu import FAKE_DEVICE, FakeGpu, fake_environment

from bench import round_gpus, round_tasks
from cuda_llm.engine.gpu.gpu_pool import GpuPool


async def fake_pool_env(gpus: int, ray_head):
    assert ray_head is None
    settings = round_gpus.settings_for(gpus)
    pool = GpuPool(list(range(gpus)), settings)
    fakes = []
    for i in range(gpus):
        fake = FakeGpu(info=dataclasses.replace(FAKE_DEVICE, index=i, uuid=f"GPU-fake-{i}"))
        fake.device_index = i  # what the pool reads of a GpuWorker
        fakes.append(fake)
    pool.workers = fakes  # type: ignore[assignment]
    await pool.start()
    env = dataclasses.replace(fake_environment(fakes[0], workers=2), gpu=pool)
    return env, settings


def test_each_configuration_validates_and_times_on_every_gpu(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(round_gpus, "open_env", fake_pool_env)
    monkeypatch.setattr(round_gpus, "gpu_counts", lambda text: [int(x) for x in text.split(",")])
    out, md = tmp_path / "round.json", tmp_path / "round.md"
    argv = ["--gpus", "1,2", "--repeats", "1", "--programs", "--json", str(out), "--md", str(md)]
    assert round_gpus.main(argv) == 0
    printed = capsys.readouterr().out
    table = md.read_text().splitlines()
    assert table[2].startswith("| vector_add | local | 1 |") and table[3].startswith("| vector_add | local | 2 |")
    assert "2 x Fake H100" in md.read_text()
    data = json.loads(out.read_text())
    runs = {r["gpus"]: r for r in data["runs"]}
    one, two = runs[1]["rounds"]["vector_add"], runs[2]["rounds"]["vector_add"]
    assert runs[2]["device"] == "2 x Fake H100"
    assert sum(one["validations_per_gpu"].values()) == 8 and len(one["validations_per_gpu"]) == 1
    # (Validations go to whichever GPU is free: with instant fakes, that may be one GPU for all.)
    assert sum(two["validations_per_gpu"].values()) == 8 and set(two["validations_per_gpu"]) <= {"0", "1"}
    assert two["timed_per_gpu"] == {"0": 4, "1": 4}, "equal candidates: four timed on each GPU"
    assert len(two["profile_phases_s"]) == 2, "one timing job per GPU"
    assert set(data["speedups"]["vector_add"]) == {"local:1", "local:2"}
    assert data["speedups"]["vector_add"]["local:1"] == pytest.approx(1.0)
    # How each candidate's sampling stopped, from the timings the workers returned (the fake's: 50
    # samples, none discarded), on the GPU that timed it.
    programs = two["programs"]
    assert sorted(p["label"] for p in programs) == sorted(c.label for c in round_gpus.candidates())
    assert Counter(p["gpu"] for p in programs) == two["timed_per_gpu"]
    assert all(p["samples"] == 50 and p["discarded"] == 0 and p["rel_iqr"] > 0 for p in programs)
    assert sum(" samples (0 discarded) over " in line for line in printed.splitlines()) == 16, printed
    # The critical path: every compile ends before its validation, and no later than the last.
    assert len(two["compiled_at_s"]) == len(two["validated_at_s"]) == len(two["nvrtc_s"]) == 8
    assert all(0 < t < c for t, c in zip(two["nvrtc_s"], two["compiled_at_s"], strict=True))
    assert all(0 < c < v for c, v in zip(two["compiled_at_s"], two["validated_at_s"], strict=True))
    assert sum("last round: compiles ended at " in line for line in printed.splitlines()) == 2, printed


def test_the_five_tasks_candidates_are_eight_launch_shapes_of_each_baseline() -> None:
    for name in round_tasks.TASKS:
        cands = round_tasks.variants(name)
        assert len(cands) == 8 and len({c.label for c in cands}) == 8, name
        shapes = {tuple(c.plan.launches[0].block) for c in cands}
        assert len(shapes) == 8 or name == "vector_add", (name, shapes)
