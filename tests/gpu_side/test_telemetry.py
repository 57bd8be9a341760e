"""NVML telemetry's "other processes on this GPU": the app's own GPU workers are not someone else's
load. Real processes and /proc, with NVML's process list given by a stand-in (no GPU needed)."""

import os
import signal
import subprocess
import sys
from types import SimpleNamespace

from cuda_llm.engine.gpu.telemetry import Nvml, is_own_process


def test_is_own_process_follows_the_parent_chain():
    # A grandchild: this process starts a shell that starts a sleeper.
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    grandchild = int(shell.stdout.readline())
    try:
        assert is_own_process(os.getpid())
        assert is_own_process(shell.pid)
        assert is_own_process(grandchild)
        assert not is_own_process(os.getppid())  # our parent started us, not the other way round
        assert not is_own_process(1)
        assert not is_own_process(2**22 + 12345)  # no such PID: someone else's, in another namespace
    finally:
        os.kill(grandchild, signal.SIGKILL)
        shell.kill()
        shell.wait()


def test_other_processes_leaves_out_our_workers():
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = [SimpleNamespace(pid=os.getpid()), SimpleNamespace(pid=worker.pid), SimpleNamespace(pid=1)]
        nvml = SimpleNamespace(
            nvmlDeviceGetMaxClockInfo=lambda h, c: 1980,
            NVML_CLOCK_SM=0,
            nvmlDeviceGetComputeRunningProcesses=lambda h: procs,
        )
        assert Nvml(nvml, handle=object()).other_processes() == 1  # only PID 1 is another's
    finally:
        worker.kill()
        worker.wait()
