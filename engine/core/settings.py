"""Every tolerance, repeat count and time limit the engine uses, named, with the reason for it.

Settings are frozen dataclasses passed down explicitly (no global mutable state); tests and
benchmarks build their own with `dataclasses.replace`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class GenerateOptions:
    temperature: float | None = None
    num_ctx: int | None = None  # ollama only: the context window
    seed: int | None = None
    # A reply longer than this is cut off (an endless reply must not run forever); kernels with a
    # plan and a short explanation fit in a few thousand tokens.
    max_tokens: int = 8192
    # Wall-clock limit for one completion, first token to last.
    timeout_s: float = 600.0
    # Time allowed for the connection and the first token (a cold model may load for a while).
    first_token_timeout_s: float = 180.0
    # Once a reply streams, the longest silence between two of its pieces: a loaded server pauses
    # seconds at most between tokens, and one that stalls mid-reply is given up on (and retried)
    # in a minute rather than held to timeout_s.
    idle_timeout_s: float = 60.0
    # Bytes one response body may bring, counted as received and again as decoded (a compressed body
    # is inflated piece by piece: engine/llm/bounded.py). A reply of max_tokens tokens is a
    # few hundred KB of text plus a hundred or so bytes of framing per streamed chunk: a few MB at
    # most. A server that sends more is runaway or hostile, and nothing past this is held.
    max_response_bytes: int = 16 * 1024 * 1024
    # Servers enforce max_tokens themselves (num_predict, max_tokens); the client also counts so that
    # a server that ignores it cannot stream forever. Each streamed chunk carries at least one token,
    # so counting chunks never cuts a reply early; a server that sends few, huge chunks is caught by
    # this character cap instead (max_tokens x this). Code averages about 4 characters per token, so
    # 32 per token leaves a wide margin while still bounding memory.
    max_chars_per_token: int = 32


# The model errors (engine/llm/base.py ErrorKind) worth another try: the server or the network may
# recover; a refused request, a wrong key or an unknown model will not.
RETRYABLE: frozenset[str] = frozenset(
    {"unreachable", "timeout", "rate_limited", "server_error", "protocol", "cut_off", "empty"}
)


@dataclass(frozen=True)
class RetryPolicy:
    # Three tries with exponential backoff ride out a restarting server or a brief 429 without
    # leaving a person waiting minutes before they are told what is wrong.
    attempts: int = 3
    base_delay_s: float = 2.0
    max_delay_s: float = 30.0
    retry_kinds: frozenset[str] = field(default_factory=lambda: RETRYABLE)


@dataclass(frozen=True)
class CompileSettings:
    # A real kernel compiles in well under a second; a template-recursion bomb must not hang the
    # session, so the NVRTC child process is killed after this.
    timeout_s: float = 30.0
    # Kernel sources are a few KiB; a 5 MB "kernel" is an attack on the compiler or the prompt.
    max_source_bytes: int = 256 * 1024
    # C++17 is what NVRTC 13 defaults to and what every example in the prompt uses.
    std: str = "c++17"
    # Line info costs nothing at run time and lets errors and profiles point at source lines.
    lineinfo: bool = True
    # Parallel compiles: NVRTC is single-threaded, so one process per core keeps a round fast;
    # four covers a round of four candidates.
    max_workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    # Memory cap of a compiler process (RLIMIT_DATA; engine/compile/compiler_process.py says why not
    # RLIMIT_AS). The heaviest allowed headers (cooperative_groups + cuda/barrier) peak at
    # 0.6 GiB; a template or macro bomb grows without bound, and with this cap NVRTC stops with
    # "out of memory" instead of taking the machine down. Four workers at the cap still fit a
    # workstation.
    memory_limit_bytes: int = 4 * 1024**3
    # Starting a compiler process imports cuda-bindings and, the first time on a machine,
    # extracts NVRTC's bundled headers (20 MB): seconds, rarely more.
    start_timeout_s: float = 60.0
    # Define what NVRTC lacks without headers (INFINITY, FLT_MAX, M_PI, uint32_t...) in front of
    # the candidate: every model uses them, and "identifier is undefined" would cost a round.
    prelude: bool = True
    # A template error can print megabytes; the head holds the first (and most useful) errors,
    # and the prompt trims further.
    max_log_bytes: int = 1024 * 1024
    # Diagnostics kept per compile: the first hundred say all a model can act on.
    max_diagnostics: int = 100
    # The PTX a candidate keeps for display (records, eval --json, the TUI): a real kernel's is tens
    # of KB; a 5 KB reply that copies a 100 KB constexpr array into 45 globals made 21 MB of it. The
    # head is kept with a note of the cut; the cubin that runs is whole (it is never stored).
    max_ptx_bytes: int = 1024 * 1024
    # What one session may add to the database in PTX and compile logs: past it, a candidate's are cut
    # to their first max_session_tail_bytes (the verdict, the diagnostics and the figures stay whole).
    max_session_output_bytes: int = 256 * 1024 * 1024
    max_session_tail_bytes: int = 16 * 1024
    # How a compiler process shuts itself in once NVRTC is warm (engine/compile/sandbox.py), tried in
    # this order: Landlock where the kernel has it, else a chroot into the header folder (in a user
    # namespace where the process is not root). Empty: no jail (tests' unconfined controls only).
    sandbox: tuple[str, ...] = ("landlock", "chroot")


@dataclass(frozen=True)
class ValidationSettings:
    # Seeds per validation size: three independent draws catch kernels right by luck.
    seeds_per_size: int = 3
    # The timing size is large; one seed there (fresh, not the profiler's) is enough to catch
    # shape-specialised code, and more would make judging slow.
    seeds_timing_size: int = 1
    # Mismatches listed in a report: enough to show a pattern, few enough for a prompt.
    mismatches_reported: int = 8
    # One run of a launch plan at the largest validation size takes milliseconds; a kernel still
    # running after this is treated as hung (the worker is restarted).
    launch_timeout_s: float = 10.0
    # The scrub fills shared memory with this 32-bit pattern before the first run (a NaN, but not
    # the output poison, so a kernel that copies garbage out is "wrong", not "unwritten") and a
    # huge finite value before the second, so code that reads shared memory it did not write
    # gets garbage either way and the two runs disagree.
    scrub_patterns: tuple[int, int] = (0x7FC0DEAD, 0x5A5A5A5A)
    # Every run that must be independent of the others (each validation run, every timed run, the
    # check after timing) starts from the same device state: outputs poisoned, the module's
    # __device__ variables put back to their loaded values, the slack around every buffer wiped;
    # and after timing every program's inputs are checked, trusted ones too
    # (engine/gpu/device_state.py). False only for bench.judge_cost's measure of what this costs;
    # nothing a person runs turns it off.
    independent_runs: bool = True
    # Cases run smallest first. After a failing case, the cases whose buffers take at most this many
    # bytes still run (a millisecond each), so the report shows the failure's pattern across sizes;
    # larger ones are not run: at the field's sizes (a 6 GB input) each costs seconds and none can
    # change the verdict. The verdict says how many were not run.
    after_failure_max_bytes: int = 64 * 2**20
    # A failing output up to this many bytes comes to the host whole to be described (the shape of
    # the failure over every element: a second of host work and its size in memory, twice over with
    # its float64 reference). A larger one is described from the device's counts and a window of
    # `failure_window_elements` from its first wrong element: whole, a 6 GB output took 147 s and
    # over 19 GB of the worker's host memory per failing case on an H200.
    describe_whole_max_bytes: int = 256 * 2**20
    # The window's length: a row of the widest outputs of the field's problems (393216 columns)
    # several times over, 4-8 MB of host memory a window.
    failure_window_elements: int = 1 << 20


@dataclass(frozen=True)
class ProfileSettings:
    # Warm up by time, not count: an idle H100 sits at 345 MHz and needs tens of ms of load to
    # reach its boost clock.
    warmup_ms: float = 60.0
    # ...unless NVML already reads the SM clock at this share of its maximum (the GPU has just been
    # validating): then two rounds of every program suffice, and a round of many short jobs does
    # not pay the ramp again on every GPU.
    warm_clock_fraction: float = 0.95
    # Fewest samples before the spread can stop the measurement (nvbench uses 10).
    min_samples: int = 10
    # Every program is timed on this many separate copies of its buffers, a sample on each in
    # turn. Where in DRAM the buffers lie moves some kernels' latency by 1-3% (H200, `python -m
    # bench.placement`: matrix_transpose 2.9%, vector_add 1.3%, layernorm 1.1%), and the shift holds
    # for as long as the buffers live: timed on one copy, a program's figure would be a draw that
    # differs from session to session, and a candidate and the baseline could each draw differently.
    placements: int = 4
    # ...but the copies together may take at most this share of the free device memory; fewer
    # copies otherwise (always at least one).
    placement_memory_share: float = 0.5
    # Stop once the interquartile range, pooled over the placements, is this small a share of the
    # median (engine/gpu/stop_rule.py says why pooled).
    stop_rel_iqr: float = 0.01
    # Or once this much GPU time has been spent on one entry, whatever the spread.
    max_gpu_time_s: float = 1.0
    # And never take more samples than this.
    max_samples: int = 400
    # A plan shorter than this is dominated by launch latency (4-10 us per event pair); it is
    # timed as a CUDA graph of K replays instead.
    graph_threshold_us: float = 50.0
    # Length of one graph replay (K = this / estimated time).
    graph_target_us: float = 2000.0
    # The L2 is flushed before every sample by reading a buffer this many times its size.
    l2_flush_factor: int = 2
    # A sample taken while the SM clock is under this share of its maximum is discarded
    # (nvbench's rule): it measures the power manager, not the kernel.
    throttle_clock_fraction: float = 0.75
    # A profile is reported as two levels when its sorted samples have a gap of at least this share
    # of the faster level (wider than 2x either level's own IQR), with this share of the samples on
    # each side: a 2% step is far above the 0.1-0.5% spread of a steady program, and a level holding
    # a fifth of the samples is no outlier.
    level_gap: float = 0.02
    level_min_share: float = 0.2
    # A time under the physical floor (memory clock x bus width; SMs x lanes x clock) cannot be
    # honest: beyond this share of it a figure is flagged as suspect, never celebrated. Not 1.0:
    # the events around a 100 us plan resolve to about 0.5 us and the clocks the limit is computed
    # from are rounded to a MHz; a kernel that skips even a twentieth of its work is still caught.
    # (Our probes' achievable ceiling is no bound: the best float4 vector_add beat the old copy
    # probe by 5% on an H100.)
    suspect_physical_share: float = 1.03
    # An imported PyTorch task's second yardstick (engine/gpu/torch_compile.py): off by default,
    # because compiling the module takes seconds to minutes (Dynamo traces it, Inductor writes and
    # Triton compiles its kernels) before the first figure; `--torch-compile` turns it on.
    torch_compile: bool = False
    # ...compiled in a request of its own with this limit: a few seconds for one fused elementwise
    # kernel, a minute or more for a convolution or a matmul with its epilogue on a cold cache. Past
    # this the worker is restarted and everything goes on with eager alone.
    torch_compile_timeout_s: float = 600.0


@dataclass(frozen=True)
class WorkerSettings:
    # Starting a worker imports cuda-bindings and creates a context: seconds, not minutes.
    start_timeout_s: float = 60.0
    # Slack added to a job's own estimate before the engine kills the worker.
    job_slack_s: float = 30.0


# When hardware counters are read (engine/counters): off: never; best: the candidate that becomes a
# round's new best (and on demand: `eval --counters`, the TUI's key); all: every correct candidate.
CountersMode = Literal["off", "best", "all"]
COUNTERS_MODES: tuple[str, ...] = ("off", "best", "all")


@dataclass(frozen=True)
class CountersSettings:
    # Best only by default: one ncu run costs seconds (each launch is replayed once per counter
    # pass), which a round of four candidates should not pay four times for figures no prompt shows.
    mode: CountersMode = "best"
    # ncu starts the probe, which loads the task's inputs at the timing size (hundreds of MB) and
    # replays each launch for some twenty counter passes: a few seconds usually, tens for the
    # largest tasks. Past this the run is killed and the round goes on without counters.
    timeout_s: float = 180.0
    # Where ncu is; None: $CUDA_LLM_NCU, then PATH, then the CUDA toolkit's usual folders.
    ncu_path: str | None = None
    # A folder that keeps ncu's raw output of every run (for a bug report, or a recorded test);
    # None: it is read and thrown away.
    keep_logs: str | None = None


@dataclass(frozen=True)
class Settings:
    compile: CompileSettings = field(default_factory=CompileSettings)
    validation: ValidationSettings = field(default_factory=ValidationSettings)
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    counters: CountersSettings = field(default_factory=CountersSettings)


@dataclass(frozen=True)
class LoopSettings:
    """The FSR loop's knobs (docs/architecture.md, "The loop"), with the reason for each default."""

    # N: candidates per request. Four parallel samples find a correct kernel far more often than
    # one while keeping a round's token cost moderate.
    candidates: int = 4
    # D: optimisation rounds. The paper's best kernels came after a handful of rounds.
    rounds: int = 5
    # R: repair requests per round when no candidate is correct (they do not count as rounds).
    repairs: int = 3
    # K: stop after this many rounds in a row without a new best (None: never).
    patience: int | None = 3
    # Stop once the best reaches this share of the achievable roofline (our probes' ceilings; None: never).
    target_roofline: float | None = 0.90
    # Stop when the session has used this many tokens, prompt and completion (None: no limit).
    token_budget: int | None = None
    # Stop when the session has run this long (None: no limit).
    time_budget_s: float | None = None
    # A winner must beat the best by at least this share, and by more than the measured noise
    # (the sum of both relative IQRs), to become the new best.
    min_gain: float = 0.02
    # Accept each round's winner without asking; the TUI can switch it off to review each one.
    auto_accept: bool = True
    generate: GenerateOptions = field(default_factory=GenerateOptions)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # The prompt's feedback section is trimmed to this many characters (failures first lose
    # detail), so prompts do not grow without bound over a long session.
    feedback_chars: int = 12_000

    def validate(self) -> None:
        from cuda_llm.engine.core.errors import UserError

        for knob in LOOP_KNOBS:
            problem = knob.problem(getattr(self, knob.field))
            if problem:
                raise UserError(f"{knob.flag} {problem}")


@dataclass(frozen=True)
class Knob:
    """One of the loop's knobs as the CLI, the TUI's start screen and its config all offer it: the
    LoopSettings field, the paper's letter, the flag, the help (its default is added from
    LoopSettings) and the range a value must be in."""

    field: str
    letter: str | None  # the paper's name: N, D, R, K
    flag: str
    short: str | None
    help: str
    kind: type  # int or float
    low: float | None = None
    high: float | None = None
    zero_is_never: bool = False  # 0 on the command line or the start screen: None (no limit)

    @property
    def default(self) -> int | float | bool:
        """LoopSettings' default, as the CLI and the start screen show it (None: 0, "never")."""
        value = getattr(LoopSettings(), self.field)
        return 0 if value is None and self.zero_is_never else value

    def help_text(self) -> str:
        """The flag's help, its default said where the help has DEFAULT, else at its end."""
        said = f"default {self.default:g}" + ("; 0: never" if self.zero_is_never else "")
        return self.help.replace("DEFAULT", said) if "DEFAULT" in self.help else f"{self.help} ({said})"

    def problem(self, value: int | float | None) -> str | None:
        """Why `value` is out of range (worded for a flag), or None."""
        if value is None:
            return None
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            return f"must be between {self.low:g} and {self.high:g}, got {value}"
        if self.low is not None and value < self.low:
            return (
                f"must not be negative, got {value}" if self.low == 0 else f"must be at least {self.low:g}, got {value}"
            )
        return None


# The loop's knobs, declared once: app/cli/run_cmd.py makes its flags of them, the TUI's start screen
# and config (app/config.py) take their defaults from them, LoopSettings.validate their ranges.
LOOP_KNOBS: tuple[Knob, ...] = (
    Knob("rounds", "D", "--rounds", "-D", "optimisation rounds", int, low=1),
    Knob("candidates", "N", "--candidates", "-N", "candidates per request", int, low=1, high=32),
    Knob("repairs", "R", "--repairs", "-R", "repair requests per round", int, low=0),
    Knob("patience", "K", "--patience", "-K", "stop after K rounds without a new best", int, zero_is_never=True),
    Knob(
        "target_roofline",
        None,
        "--target-roofline",
        None,
        "stop when the best reaches this share of the achievable roofline (our probes' measured ceilings, "
        "not the physical limit; DEFAULT)",
        float,
        # A share: above 1 (100%) only a suspect timing reaches, so the loop would never stop on it.
        low=0,
        high=1,
        zero_is_never=True,
    ),
)
KNOBS = {knob.field: knob for knob in LOOP_KNOBS}
