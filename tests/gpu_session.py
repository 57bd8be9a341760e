"""The `gpu` fixture: one real GPU worker and compiler pool for the whole test session, driven
synchronously. Tests that use it are marked `gpu` and skip cleanly when there is no CUDA driver or
device. tests/gpu and tests/faults import the fixture from here."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import pytest

from cuda_llm.engine.core.settings import Settings, ValidationSettings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment, gpu_unavailable_reason
from cuda_llm.engine.judge.judgement import Candidate, Judgement
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import Task
from cuda_llm.engine.task.plan import LaunchPlan, parse_plan

# Hung kernels are detected after this long in the tests (the default is 10 s): an endless loop
# costs seconds of GPU time, not minutes.
TEST_LAUNCH_TIMEOUT_S = 4.0


class GpuSession:
    def __init__(self, runner: asyncio.Runner, env: JudgeEnvironment, settings: Settings) -> None:
        self.runner = runner
        self.env = env
        self.settings = settings
        self.library = TaskLibrary()
        self._tasks: dict[str, Task] = {}

    def task(self, name: str) -> Task:
        if name not in self._tasks:
            self._tasks[name] = self.library.get(name)
        return self._tasks[name]

    def judge(
        self,
        task_name: str,
        source: str | None = None,
        plan: LaunchPlan | dict | str | None = None,
        profile: bool = False,
        label: str = "candidate",
    ) -> Judgement:
        task = self.task(task_name)
        if isinstance(plan, dict | str):
            plan = parse_plan(plan)
        cand = Candidate(
            label,
            source if source is not None else task.baseline_source,
            plan if plan is not None else task.baseline_plan,
            origin="user",
        )
        judge = self.env.judge(task, self.settings)
        return self.runner.run(judge.judge(cand, profile=profile))

    def run(self, coro):
        return self.runner.run(coro)


@pytest.fixture(scope="session")
def gpu() -> Iterator[GpuSession]:
    reason = gpu_unavailable_reason()
    if reason:
        pytest.skip(f"{reason}: GPU tests need a CUDA driver and device")
    settings = Settings(validation=dataclasses.replace(ValidationSettings(), launch_timeout_s=TEST_LAUNCH_TIMEOUT_S))
    runner = asyncio.Runner()
    env = runner.run(open_environment(settings))
    if env.gpu is None:  # a driver and a device are there, yet the worker did not start: a failure
        runner.close()
        pytest.fail(f"the GPU worker did not start: {env.notice}")
    try:
        yield GpuSession(runner, env, settings)
    finally:
        runner.run(env.close())
        runner.close()
