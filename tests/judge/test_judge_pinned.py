"""The judge's first stage and its constructor, pinned by behaviour (the survivors of a mutation run
of engine/judge/judge.py, docs/testing.md): what a refused source, a failed compile, a plan the PTX
does not bind and a size no GPU launches become, and what the judge keeps from its arguments.

The real compiler compiles; a thin stub in front of it records what it was asked and can replace
fields of its answer (a failed compile with chosen diagnostics, other PTX entries, larger kernels)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from fakes.fake_gpu import FAKE_DEVICE, FAKE_PEAKS_SLOW, FakeGpu, fake_environment

from cuda_llm.engine.compile.result import Diagnostic, failed_result
from cuda_llm.engine.contract.limits import arch_limits, device_limits
from cuda_llm.engine.contract.reply import parse_reply
from cuda_llm.engine.core.errors import FormatError, headline
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.client import ProfileFailure
from cuda_llm.engine.gpu.protocol import Fault, Timing
from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_LABEL
from cuda_llm.engine.judge.judge import Judge, baseline_problem
from cuda_llm.engine.judge.judgement import Candidate, Compiled, Judgement, LibraryResult
from cuda_llm.engine.judge.metrics import figures
from cuda_llm.engine.task import TaskLibrary

KERNEL = (
    'extern "C" __global__ void vadd_{marker}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }}"
)


_COMPILED: dict = {}


@dataclass
class StubCompiler:
    """The real compiler, with a record of each request and fields replaced on its answers."""

    real: object
    replace: dict = field(default_factory=dict)
    calls: list = field(default_factory=list)

    async def compile(self, checked, arch):
        self.calls.append((checked, arch))
        key = (checked.text, checked.headers, arch)
        if key not in _COMPILED:  # the same source compiles the same way: once per run of the tests
            _COMPILED[key] = await self.real.compile(checked, arch)  # type: ignore[attr-defined]
        return dataclasses.replace(_COMPILED[key], **self.replace)


@pytest.fixture(scope="module")
def task():
    return TaskLibrary().get("vector_add")


@pytest.fixture
async def stub():
    env = fake_environment()
    try:
        yield StubCompiler(env.compiler)
    finally:
        await env.close()


def candidate(task, marker: str = "k", source: str | None = None, kernel: str | None = None) -> Candidate:
    plan = dataclasses.replace(
        task.baseline_plan,
        launches=tuple(
            dataclasses.replace(la, kernel=kernel or f"vadd_{marker}") for la in task.baseline_plan.launches
        ),
    )
    return Candidate("c1", source if source is not None else KERNEL.format(marker=marker), plan)


def error(line: int | None, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(severity, line, None, message, None)  # type: ignore[arg-type]


# ---- the constructor --------------------------------------------------------------------------------


def test_the_judge_keeps_its_arguments_and_starts_with_nothing_measured(task):
    compiler, gpu, counters, settings = object(), object(), object(), Settings()
    judge = Judge(task, compiler, gpu, "sm_80", settings, FAKE_DEVICE, FAKE_PEAKS_SLOW, counters)  # type: ignore[arg-type]
    assert judge.task is task and judge.compiler is compiler and judge.gpu is gpu and judge.arch == "sm_80"
    assert judge.settings is settings and judge.device is FAKE_DEVICE and judge.peaks is FAKE_PEAKS_SLOW
    assert judge.counters is counters and not judge.compile_only
    assert judge.torch_compile_timing is None


def test_a_judge_with_a_device_takes_its_limits_from_the_device(task):
    judge = Judge(task, object(), object(), "sm_75", Settings(), FAKE_DEVICE)  # type: ignore[arg-type]
    assert judge.limits == device_limits(FAKE_DEVICE)
    assert judge.limits != arch_limits("sm_75")


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_a_judge_without_a_device_takes_the_arch_limits(task, arch):
    judge = Judge(task, object(), None, arch, Settings())  # type: ignore[arg-type]
    assert judge.limits == arch_limits(arch) and judge.compile_only
    assert judge.device is None and judge.peaks is None and judge.counters is None


async def test_a_new_judge_has_no_library_figure_and_compiles_its_baseline(task, stub):
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    lib = await judge.library()
    assert lib.note == "compile-only: no GPU to time it on" and lib.timing is None
    b = await judge.baseline()
    assert isinstance(b, Compiled) and b.candidate.origin == "baseline"
    assert len(stub.calls) == 1


# ---- the pre-check: refused before the compiler is asked --------------------------------------------


async def test_a_source_with_a_nul_byte_is_refused_before_compiling(task, stub):
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    cand = candidate(task, source=KERNEL.format(marker="k") + "\n\0\n")
    j = await judge.compile(cand)
    assert isinstance(j, Judgement)
    assert (j.label, j.status, j.message) == ("c1", "format_error", "the source contains a NUL byte (line 2)")
    assert j.detail == "the source contains a NUL byte (line 2)"
    assert j.candidate is cand and j.compile is None
    assert stub.calls == []


async def test_a_plan_naming_a_missing_kernel_is_refused_before_compiling(task, stub):
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    cand = candidate(task, kernel="vadd_missing")
    j = await judge.compile(cand)
    assert isinstance(j, Judgement) and j.status == "format_error"
    assert "vadd_missing" in j.message and j.message == j.detail.strip().splitlines()[0].strip()
    assert j.candidate is cand and j.compile is None
    assert stub.calls == []


async def test_an_accepted_source_is_compiled_for_the_judges_arch_as_checked(task, stub):
    judge = Judge(task, stub, None, "sm_75", Settings())  # type: ignore[arg-type]
    cand = candidate(task)
    c = await judge.compile(cand)
    assert isinstance(c, Compiled) and c.candidate is cand
    ((checked, arch),) = stub.calls
    assert arch == "sm_75" and c.compile.arch == "sm_75"
    assert checked.text == cand.source
    assert [la.kernel for la in c.bound.launches] == ["vadd_k"] * len(cand.plan.launches)


# ---- a failed compile ---------------------------------------------------------------------------------


async def failed(task, stub, diagnostics, error_text=None) -> tuple[Candidate, Judgement]:
    stub.replace = {"ok": False, "diagnostics": diagnostics, "error": error_text, "log": "the log"}
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    cand = candidate(task)
    j = await judge.compile(cand)
    assert isinstance(j, Judgement)
    assert j.label == "c1" and j.status == "compile_error" and j.detail == "the log" and j.candidate is cand
    assert j.compile is not None and j.compile.ok is False
    return cand, j


async def test_a_failed_compile_names_the_first_errors_line_and_counts_the_rest(task, stub):
    diags = (error(1, "only a warning", "warning"), error(3, "first"), error(None, "second"), error(7, "third"))
    _, j = await failed(task, stub, diags)
    assert j.message == "compile error at line 3: first (+2 more)"
    assert j.compile.diagnostics == diags


async def test_one_error_has_no_count_and_one_without_a_line_no_line(task, stub):
    _, j = await failed(task, stub, (error(None, "in a header"),))
    assert j.message == "compile error at in a header"
    _, j = await failed(task, stub, (error(0, "line zero"), error(2, "next")))
    assert j.message == "compile error at line zero (+1 more)"


async def test_a_failed_compile_without_errors_says_why_or_that_it_failed(task, stub):
    _, j = await failed(task, stub, (error(4, "just a warning", "warning"),), "NVRTC ran out of time")
    assert j.message == "NVRTC ran out of time"
    _, j = await failed(task, stub, ())
    assert j.message == "compile failed"


# ---- after the compiler: binding to the PTX, the sizes, the caps ---------------------------------------


async def test_a_plan_the_ptx_does_not_bind_is_a_format_error_with_the_compile(task, stub):
    stub.replace = {"ptx_entries": {"some_other_kernel": (8, 8, 8, 4)}}
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    cand = candidate(task)
    j = await judge.compile(cand)
    assert isinstance(j, Judgement) and (j.label, j.status) == ("c1", "format_error")
    assert j.message and "\n" not in j.message and j.message in j.detail
    assert (
        j.candidate is cand and j.compile is not None and j.compile.ptx_entries == {"some_other_kernel": (8, 8, 8, 4)}
    )


async def test_static_shared_memory_past_the_limit_is_a_launch_error_before_running(task, stub):
    real = StubCompiler(stub.real)
    plain = await Judge(task, real, None, "sm_90", Settings()).compile(candidate(task))  # type: ignore[arg-type]
    assert isinstance(plain, Compiled)
    big = tuple(dataclasses.replace(k, shared_bytes=1 << 20) for k in plain.compile.kernels)
    stub.replace = {"kernels": big}
    judge = Judge(task, stub, None, "sm_90", Settings())  # type: ignore[arg-type]
    cand = candidate(task)
    j = await judge.compile(cand)
    assert isinstance(j, Judgement) and (j.label, j.status) == ("c1", "launch_error")
    assert j.message and "\n" not in j.message and j.message in j.detail and "shared" in j.detail
    assert j.candidate is cand and j.compile is not None and j.compile.kernels == big


async def test_the_ptx_and_the_log_are_cut_to_their_own_caps(task, stub):
    stub.replace = {"log": "L" * 500, "ptx": "P" * 700}
    settings = Settings()
    settings = dataclasses.replace(
        settings, compile=dataclasses.replace(settings.compile, max_ptx_bytes=100, max_log_bytes=40)
    )
    judge = Judge(task, stub, None, "sm_90", settings)  # type: ignore[arg-type]
    c = await judge.compile(candidate(task))
    assert isinstance(c, Compiled)
    assert c.compile.ptx == "P" * 100 + "\n[PTX cut: 700 bytes, the first 100 kept]\n"
    assert c.compile.log == "L" * 40 + "\n[compile log cut: 500 bytes, the first 40 kept]\n"


# ---- a baseline that is refused: the one line its author acts on ------------------------------------


def refused_baseline(task, status: str, message: str, diagnostics=None) -> Judgement:
    result = None
    if diagnostics is not None:
        result = failed_result("sm_90", "compile failed")
        result = dataclasses.replace(result, diagnostics=diagnostics)
    return Judgement("baseline", status, message, compile=result)  # type: ignore[arg-type]


def test_a_refused_baseline_names_the_first_error_that_has_a_line(task):
    diags = (error(2, "only a warning", "warning"), error(None, "in a header"), error(9, "x is undefined"))
    text = baseline_problem(task, refused_baseline(task, "compile_error", "compile error at in a header", diags))
    path = task.folder / "baseline.cu"
    assert text == (
        f"{path}:9: the baseline of task 'vector_add' does not compile (compile error: x is undefined); "
        f"`cuda-llm eval {task.folder} {path} --plan {task.folder / 'baseline.json'} --compile-only` shows it all"
    )


@pytest.mark.parametrize(
    "diagnostics",
    [None, (), (error(None, "in a header"),), (error(3, "only a warning", "warning"),)],
    ids=["no-compile", "no-diagnostics", "no-line", "a-warning"],
)
def test_a_refused_baseline_without_an_error_line_names_the_file_and_the_verdict(task, diagnostics):
    text = baseline_problem(task, refused_baseline(task, "format_error", "the plan names no kernel", diagnostics))
    path = task.folder / "baseline.cu"
    assert text.startswith(
        f"{path}: the baseline of task 'vector_add' does not compile (format error: the plan names no kernel); "
    )


# ---- torch.compile, the second yardstick ------------------------------------------------------------


@dataclass
class TorchGpu(FakeGpu):
    """The fake GPU with torch.compile: `compile_note` is what compiling answers (None: compiled),
    `failure` fails the session, `tc_timing` / `tc_note` are torch.compile's timing and note."""

    compile_note: str | None = None
    failure: Fault | None = None
    tc_timing: Timing | None = None
    tc_note: str | None = None
    asked: list = field(default_factory=list)

    async def torch_compile(self, task) -> str | None:
        self.asked.append(task)
        return self.compile_note

    async def profile(self, task, programs, library: bool = False, torch_compile: bool = False):
        assert torch_compile and not library
        self.profiled.append(tuple(p.label for p in programs))
        if self.failure is not None:
            return ProfileFailure(self.failure)
        rep = await super().profile(task, programs)
        extra = (self.tc_timing,) if self.tc_timing is not None else ()
        return dataclasses.replace(rep, timings=rep.timings + extra, torch_compile_note=self.tc_note)


def tc_timing(us: float, **fields) -> Timing:
    return Timing(TORCH_COMPILE_LABEL, us, us * 0.99, us * 1.01, us * 0.98, 50, 0, "events", 1, 1980.0, **fields)


async def torch_compiled(task, gpu) -> LibraryResult:
    env = fake_environment(gpu)
    try:
        judge = env.judge(task, Settings())
        result = await judge.torch_compile()
        assert await judge.torch_compile() is result, "measured once per judge"
        assert judge.torch_compile_timing is result.timing
        return result
    finally:
        await env.close()


@pytest.fixture(scope="module")
def imported(task):
    return dataclasses.replace(task, pytorch_module="model.py")


async def test_torch_compile_needs_an_imported_task_a_gpu_and_a_local_one(task, imported, stub):
    gpu = TorchGpu()
    r = await torch_compiled(task, gpu)
    assert r == LibraryResult("torch.compile", note="task 'vector_add' is not imported from a PyTorch module")
    r = await Judge(imported, stub, None, "sm_90", Settings()).torch_compile()  # type: ignore[arg-type]
    assert r == LibraryResult("torch.compile", note="compile-only: no GPU to time it on")
    r = await torch_compiled(imported, FakeGpu())
    assert r == LibraryResult("torch.compile", note="torch.compile is timed on this machine's own GPUs only")
    assert gpu.asked == [] and gpu.profiled == []


async def test_torch_compile_that_does_not_compile_says_why_and_is_not_timed(imported):
    gpu = TorchGpu(compile_note="torch.compile failed: no inductor")
    r = await torch_compiled(imported, gpu)
    assert r == LibraryResult("torch.compile", note="torch.compile failed: no inductor")
    assert gpu.asked == [imported] and gpu.profiled == []


async def test_torch_compile_whose_session_fails_says_why(imported):
    gpu = TorchGpu(failure=Fault("crashed", "WORKER_DIED", "the worker process was killed (signal 9)"))
    r = await torch_compiled(imported, gpu)
    assert r == LibraryResult("torch.compile", note="could not be timed: the worker process was killed (signal 9)")
    assert gpu.asked == [imported] and gpu.profiled == [("baseline",)]


@pytest.mark.parametrize(("note", "said"), [("torch is not installed", "torch is not installed"), (None, "not timed")])
async def test_torch_compile_without_a_timing_keeps_the_workers_note(imported, note, said):
    r = await torch_compiled(imported, TorchGpu(tc_note=note))
    assert r == LibraryResult("torch.compile", note=said)


async def test_torch_compile_whose_timing_faulted_gives_the_faults_message(imported):
    fault = Fault("launch_error", "LAUNCH", "an illegal memory access")
    r = await torch_compiled(imported, TorchGpu(tc_timing=tc_timing(80.0, fault=fault)))
    assert r == LibraryResult("torch.compile", note="an illegal memory access", device=FAKE_DEVICE.name)


async def test_torch_compile_timed_gets_figures_against_the_baseline_beside_it(imported):
    t = tc_timing(80.0)
    r = await torch_compiled(imported, TorchGpu(tc_timing=t))
    assert (r.name, r.timing, r.note, r.device) == ("torch.compile", t, None, FAKE_DEVICE.name)
    assert r.figures is not None
    assert r.figures == figures(
        imported, t, FAKE_PEAKS_SLOW, timing_of_baseline(), Settings().profile.suspect_physical_share
    )
    assert r.figures.speedup == 100.0 / 80.0 and r.figures.floor_us


def timing_of_baseline() -> Timing:
    return FakeGpu()._timing("baseline", "")


async def test_torch_compile_just_under_the_physical_floor_is_judged_by_the_setting(imported):
    # 18.0 us against vector_add's physical floor of 18.3 us: 102%, within the default 103%.
    r = await torch_compiled(imported, TorchGpu(tc_timing=tc_timing(18.0)))
    assert r.figures is not None and r.figures.physical_pct > 100 and r.figures.suspect is None


# ---- a reply made a candidate -----------------------------------------------------------------------

REPLY = """Two loads a thread would be no faster here.

```cuda
{source}
```

```json
{{"launches": [{{"kernel": "vadd_k", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}}]}}
```
"""


def test_a_reply_becomes_a_candidate_with_its_label_source_plan_and_origin(task):
    judge = Judge(task, object(), None, "sm_90", Settings())  # type: ignore[arg-type]
    source = KERNEL.format(marker="k")
    reply = REPLY.format(source=source)
    expected = parse_reply(reply)
    cand = judge.parse("r2-3", reply)
    assert isinstance(cand, Candidate)
    assert (cand.label, cand.source, cand.plan, cand.origin) == ("r2-3", expected.source, expected.plan, "model")
    assert cand.source.strip() == source and cand.plan.launches[0].kernel == "vadd_k"
    assert cand.explanation == expected.explanation
    assert judge.parse("mine", reply, origin="user").origin == "user"


def test_a_reply_without_code_is_a_format_error_with_its_first_line_and_the_whole_reason(task):
    judge = Judge(task, object(), None, "sm_90", Settings())  # type: ignore[arg-type]
    with pytest.raises(FormatError) as raised:
        parse_reply("no code here")
    j = judge.parse("r1-1", "no code here")
    assert isinstance(j, Judgement)
    assert (j.label, j.status) == ("r1-1", "format_error")
    assert j.message == headline(str(raised.value)) and j.detail == str(raised.value)
    assert j.message and j.detail
