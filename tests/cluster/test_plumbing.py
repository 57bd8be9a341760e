"""What --cluster changes without a cluster: the options that carry it, the TUI's config, the task
bundle, the choice of GPU model, and that nothing imports Ray unless a cluster is asked for."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from ray_nodes import require_ray

from cuda_llm.app.cli.bench_cmd import request_from_args, request_from_bench
from cuda_llm.app.cli.main import parse
from cuda_llm.app.cli.run_cmd import continue_line, resume_command, session_options
from cuda_llm.app.config import AppConfig, load_config, save_config
from cuda_llm.app.options import Choices, Defaults, new_session, resume_session
from cuda_llm.app.tui_args import parse_tui
from cuda_llm.engine.cluster.bundle import TaskBundle, pack_task, unpack_task
from cuda_llm.engine.cluster.cluster_environment import choose_model
from cuda_llm.engine.cluster.connection import ClusterError
from cuda_llm.engine.cluster.fleet import Fleet, Member
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.extras import install_hint
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr.judging import open_environment
from cuda_llm.engine.gpu.protocol import RanOn

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_option_reaches_the_session_and_the_resume_line(tmp_path):
    for argv in (["run", "vector_add", "--model", "ollama:m"], ["bench", "--model", "ollama:m"]):
        args = parse([*argv, "--cluster", "ray://head:10001", "--gpus", "H100"])
        options = session_options(args, "vector_add")
        assert options.cluster == "ray://head:10001" and options.gpu == "H100"
    assert parse(["doctor", "--cluster", "auto"]).cluster == "auto"
    assert parse_tui(["--cluster", "auto"]).cluster == "auto"
    assert session_options(parse(["run", "vector_add", "--model", "ollama:m"]), "vector_add").cluster is None

    class Replay:
        spec = "replay:3"

    line = resume_command(7, "/tmp/s.db", Replay(), "ray://head:10001")
    assert line == "cuda-llm run --resume 7 --headless --db /tmp/s.db --cluster ray://head:10001"

    class Ollama:
        spec = "ollama:m"
        where = "http://gpu-box:11434"

    line = continue_line(7, None, Ollama(), "auto")
    assert line == "continue with: cuda-llm run --resume 7 --headless --cluster auto --host http://gpu-box:11434"
    # A replay that ran out of replies goes on with a model, on the same cluster.
    line = continue_line(7, str(tmp_path / "none.db"), Replay(), "ray://head:10001")
    assert line.endswith(
        f"cuda-llm run --resume 7 --headless --model ollama:MODEL --db {tmp_path / 'none.db'} "
        "--cluster ray://head:10001"
    ), line
    assert "--cluster" not in continue_line(7, None, Ollama())


def test_bench_takes_the_cluster_but_does_not_record_it_as_what_it_ran(tmp_path):
    args = parse(["bench", "--model", "ollama:m", "--tasks", "vector_add", "--cluster", "auto", "--gpus", "H100"])
    request = request_from_args(args)
    assert (request.cluster, request.gpus) == ("auto", "H100")
    assert "cluster" not in request.to_json() and "gpus" not in request.to_json()
    saved = {"request": request.to_json(), "model": "ollama:m", "rows": []}
    again = request_from_bench(saved, "bench.json", parse(["bench", "--rerun", "x", "--cluster", "ray://h:10001"]))
    assert again.cluster == "ray://h:10001" and again.tasks == ("vector_add",)
    assert request_from_bench(saved, "bench.json", parse(["bench", "--rerun", "x"])).cluster is None


def test_the_tui_config_names_a_cluster_and_sessions_use_it(tmp_path):
    path = tmp_path / "tui.toml"
    assert save_config(AppConfig(cluster="ray://head:10001"), path) is None
    assert load_config(path).config.cluster == "ray://head:10001"
    defaults = Defaults(cluster="ray://head:10001")
    choices = Choices("vector_add", "ollama:m", 4, 5, 3, 3, 0.9, False)
    assert new_session(defaults, choices).options.cluster == "ray://head:10001"
    assert resume_session(defaults, 3, False).options.cluster == "ray://head:10001"

    from cuda_llm.app.app import CudaLlmApp

    app = CudaLlmApp(Defaults(), config_path=path, poll_telemetry=False)
    assert app.defaults.cluster == "ray://head:10001", "the config's cluster when the command line names none"
    app = CudaLlmApp(Defaults(cluster="auto"), config_path=path, poll_telemetry=False)
    assert app.defaults.cluster == "auto", "--cluster wins over the config file"


def test_nothing_imports_ray_without_a_cluster(tmp_path):
    """eval, doctor and the TUI's modules, in a fresh interpreter: Ray stays out of sys.modules."""
    reply = tmp_path / "kernel.cu"
    reply.write_text((ROOT / "tasks" / "vector_add" / "baseline.cu").read_text())
    plan = ROOT / "tasks" / "vector_add" / "baseline.json"
    script = f"""
import contextlib, io, sys
from cuda_llm.app.cli.main import main
import cuda_llm.app.app, cuda_llm.app.launcher, cuda_llm.engine.fsr.session, cuda_llm.app.cli.bench_cmd
from cuda_llm.app.cli import doctor_cmd
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["eval", "vector_add", {str(reply)!r}, "--plan", {str(plan)!r}, "--compile-only"])
    doctor_cmd.check_packages()
assert code == 0, code
print("ray" in sys.modules, any(m.startswith("cuda_llm.engine.cluster.") and m != "cuda_llm.engine.cluster.doctor"
      for m in sys.modules))
"""
    env = {"CUDA_LLM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"], out.stdout


async def test_a_cluster_without_ray_installed_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ClusterError) as caught:
        await open_environment(Settings(), cluster="ray://head:10001")
    assert str(caught.value) == f"Ray is not installed: --cluster needs it ({install_hint('cluster')})"


def test_a_task_bundle_unpacks_once_and_only_inside_its_folder(tmp_path):
    folder = ROOT / "tasks" / "vector_add"
    bundle = pack_task(folder, 1 << 20)
    assert pack_task(folder, 1 << 20).key == bundle.key, "the key is the content's"
    assert {name for name, _ in bundle.files} >= {"task.toml", "reference.py", "baseline.cu", "baseline.json"}
    assert not any(name.startswith((".", "__pycache__")) for name, _ in bundle.files)
    unpacked = unpack_task(bundle, tmp_path / "cache")
    assert unpacked == tmp_path / "cache" / bundle.key / "vector_add"
    assert (unpacked / "baseline.cu").read_bytes() == (folder / "baseline.cu").read_bytes()
    assert unpack_task(bundle, tmp_path / "cache") == unpacked
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [bundle.key], "no staging folder is left"
    for bad in ("../evil.py", "/etc/passwd", ".."):
        with pytest.raises(ValueError):
            unpack_task(TaskBundle("k", "t", ((bad, b"x"),)), tmp_path / "cache")
    with pytest.raises(UserError, match="holds more than"):
        pack_task(folder, 100)


def _fleet(*models: str) -> Fleet:
    from fakes.fake_gpu import FAKE_DEVICE

    members = []
    for i, model in enumerate(models):
        info = dataclasses.replace(FAKE_DEVICE, name=model, uuid=f"GPU-{i}")
        members.append(Member(object(), info, RanOn(f"node{i}", 0, model, info.uuid, f"id{i}")))
    return Fleet("ray://head:10001", members)


def test_a_session_judges_on_one_gpu_model():
    fleet = _fleet("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    chosen, others = choose_model(fleet, None)
    assert {m.model for m in chosen} == {"NVIDIA H100 80GB HBM3"} and len(chosen) == 2, "the model it has most of"
    assert [m.model for m in others] == ["NVIDIA A100-SXM4-40GB"]
    chosen, _ = choose_model(fleet, "a100")
    assert [m.model for m in chosen] == ["NVIDIA A100-SXM4-40GB"]
    with pytest.raises(ClusterError, match=r"--gpus 0,1: .* 1 x NVIDIA A100-SXM4-40GB, 2 x NVIDIA H100 80GB HBM3"):
        choose_model(fleet, "0,1")


def test_a_head_that_accepts_connections_answers_and_a_closed_port_does_not():
    import socket

    from cuda_llm.engine.cluster.connection import head_answers

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert head_answers(f"127.0.0.1:{port}") and head_answers(f"ray://127.0.0.1:{port}")
    assert not head_answers(f"ray://127.0.0.1:{port}"), "the head is gone: 'lost the Ray cluster', not its nodes"


def test_the_short_reasons_cut_at_a_word():
    from cuda_llm.engine.cluster.cluster_pool import shorten

    line = "GpuUnavailable: the GPU worker could not start: " + "cudaErrorInsufficientDriver " * 20
    short = shorten(line, 80)
    assert len(short) <= 80 and short.endswith("…") and short[:-1] == line[: len(short) - 1]
    assert line[len(short) - 1] == " ", "never mid-word"
    assert shorten("short", 80) == "short"


def test_an_actor_is_an_orphan_when_what_started_it_is_gone():
    """reap_orphans ends these: a gone process's actors, and an earlier Ray job of this process (a
    session closed and opened again); never a live process's, another machine's, or this job's."""
    from cuda_llm.engine.cluster.fleet import is_orphan

    live = {100, 200}.__contains__
    here, pid, job = "vm", 100, "02000000"
    assert is_orphan("cuda-llm:vm:300:01000000-ab12cd:gpu0", here, pid, job, live)  # process gone
    assert not is_orphan("cuda-llm:vm:200:01000000-ab12cd:gpu0", here, pid, job, live)  # alive
    assert not is_orphan("cuda-llm:gpu-box:300:01000000-ab12cd:gpu0", here, pid, job, live)  # elsewhere
    assert is_orphan("cuda-llm:vm:100:01000000-ab12cd:gpu1", here, pid, job, live)  # earlier job
    assert not is_orphan("cuda-llm:vm:100:02000000-ab12cd:gpu1", here, pid, job, live)  # this job
    # A name without a job (an older cuda-llm), or a Ray that does not say: never this process's own.
    assert not is_orphan("cuda-llm:vm:100:ab12cd:gpu1", here, pid, job, live)
    assert not is_orphan("cuda-llm:vm:100:01000000-ab12cd:gpu1", here, pid, "", live)
    assert not is_orphan("someone-else:vm:300:x:gpu0", here, pid, job, live)


def test_a_session_asks_for_every_gpu_no_session_holds_whatever_ray_counts_free():
    """Ray's count of free GPUs trails what holds them, and no session is refused for that lag; it is
    refused at once only when the sessions' own actors hold every GPU and Ray agrees."""
    from cuda_llm.engine.cluster.fleet import gpus_to_ask

    assert gpus_to_ask(free=2, total=2, held_by_sessions=0) == 2
    assert gpus_to_ask(free=0, total=2, held_by_sessions=0) == 2  # a cluster just started: nothing counted yet
    assert gpus_to_ask(free=0, total=2, held_by_sessions=1) == 1  # a session just closed its other GPU
    assert gpus_to_ask(free=1, total=2, held_by_sessions=2) == 1  # Ray saw one free: it is tried
    assert gpus_to_ask(free=0, total=2, held_by_sessions=2) == 0  # held, and Ray agrees: refused
    assert gpus_to_ask(free=0, total=2, held_by_sessions=3) == 0  # an actor still waiting to be placed


class _Call:
    """A Ray actor method as the fleet calls it: `.remote()` gives something to await."""

    def __init__(self, answer_after_s: float | None, answer: object) -> None:
        self.after, self.answer = answer_after_s, answer

    def remote(self):
        async def call():
            if self.after is None:
                await asyncio.Event().wait()  # never placed: a GPU another job holds
            else:
                await asyncio.sleep(self.after)
            return self.answer

        return call()


class _Actor:
    def __init__(self, placed_after_s: float | None, name: str) -> None:
        self.placed = _Call(placed_after_s, True)
        self.start = _Call(0.0, name)


async def test_actors_slow_to_be_placed_are_waited_for_and_one_never_placed_is_given_up():
    """On a loaded machine Ray takes seconds to answer for every actor, the placeable ones about
    alike: each gets as long again as the first answer took (the grace at least), so none of them is
    taken for a GPU held, while the actor Ray never places is still given up."""
    require_ray()
    from cuda_llm.engine.cluster.cluster_settings import ClusterSettings
    from cuda_llm.engine.cluster.fleet import _answers

    cluster = ClusterSettings(placement_grace_s=0.2, start_timeout_s=30.0)
    actors = [_Actor(1.0, "gpu0"), _Actor(1.5, "gpu1"), _Actor(None, "held")]
    answers = await _answers(actors, cluster, first_wait_s=30.0)
    assert answers == ["gpu0", "gpu1", None]


class _ClientRef:
    """A Ray client's ObjectRef as asyncio sees it: awaiting it awaits a concurrent future that the
    client's own thread completes (`ray.util.client.common.ClientObjectRef.__await__`)."""

    def __init__(self) -> None:
        self.ray_side: concurrent.futures.Future[object] = concurrent.futures.Future()

    def __await__(self):
        return asyncio.wrap_future(self.ray_side).__await__()


async def _turns(n: int = 5) -> None:
    """A few turns of the event loop: what is scheduled now runs, with no time waited."""
    for _ in range(n):
        await asyncio.sleep(0)


@pytest.mark.parametrize("given_up_by", ["its time limit", "a cancelled caller"])
async def test_a_ray_call_given_up_leaves_ray_s_own_future_alone(given_up_by):
    """A call given up (a timed-out job, a revive loop ended at close) must not cancel the client's
    future: when the connection ends, the client's thread sets every pending call's outcome, and on
    a cancelled one it raised InvalidStateError with a traceback on stderr (seen in a CI run of the
    cluster-goes-away test; in the TUI it lands on the screen)."""
    from cuda_llm.engine.cluster.connection import ray_result

    ref = _ClientRef()
    if given_up_by == "its time limit":
        with pytest.raises(TimeoutError):
            await ray_result(ref, 0.05)
    else:
        waiting = asyncio.ensure_future(ray_result(ref, None))
        await _turns()  # the call is under way, waiting on Ray's future
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert not ref.ray_side.cancelled()
    ref.ray_side.set_exception(ConnectionError("the connection closed"))  # the client's thread, later
    await _turns()  # the callbacks it schedules run (an error in one would be logged, not raised here)
