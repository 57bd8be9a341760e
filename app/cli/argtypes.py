"""Number options checked as argparse reads them: a value out of range is a usage error (one line,
exit 2) before any work starts, never a setting sent to a server or a listing that shows nothing."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from cuda_llm.engine.core.settings import Knob


def _number(kind: type, text: str) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_int(text: str) -> int:
    value = int(_number(int, text))
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer (1 or more)")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(int, text))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def positive_float(text: str) -> float:
    value = float(_number(float, text))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not above 0")
    return value


def non_negative_float(text: str) -> float:
    value = float(_number(float, text))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value:g} is negative")
    return value


def arch(text: str) -> str:
    """A GPU architecture this machine's NVRTC compiles for ("sm_90", "90", "compute_90" -> "sm_90"),
    checked when the command line is read: a typo is a usage error, not a baseline or a candidate
    that "does not compile" seconds later. Where NVRTC cannot be loaded the name is only normalised
    (the compiler's own error says what is missing)."""
    from cuda_llm.engine.compile.nvrtc import normalize_arch
    from cuda_llm.engine.compile.nvrtc_library import supported_archs, version
    from cuda_llm.engine.compile.result import CompilerUnavailableError

    try:
        name = normalize_arch(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    try:
        known, (major, minor) = supported_archs(), version()
    except CompilerUnavailableError:
        return name
    number = int("".join(ch for ch in name if ch.isdigit()))
    if number not in known:
        listed = ", ".join(f"sm_{a}" for a in known)
        raise argparse.ArgumentTypeError(f"NVRTC {major}.{minor} cannot compile for {name} (it knows {listed})")
    return name


# Units of an age (`sessions prune --older-than 30d`), in seconds.
AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def age(text: str) -> float:
    """An age as seconds: 30d, 12h, 90m, 45s, 2w, or a plain number of days."""
    t = text.strip().lower()
    unit = t[-1] if t and t[-1] in AGE_UNITS else "d"
    number = t[:-1] if t and t[-1] in AGE_UNITS else t
    try:
        value = float(_number(float, number)) if number else -1.0
    except argparse.ArgumentTypeError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age such as 30d, 12h or 90m")
    return value * AGE_UNITS[unit]


def knob_value(spec: Knob) -> Callable[[str], int | float]:
    """A loop knob's value (engine/core/settings.py LOOP_KNOBS), its range checked as it is read:
    `-N 0` is a usage error in the parser's pass, not a second later from the loop's settings."""

    def read(text: str) -> int | float:
        value = _number(spec.kind, text)
        if spec.zero_is_never and value == 0:
            return value
        if spec.zero_is_never and value < 0:
            raise argparse.ArgumentTypeError(f"{value:g} is negative (0 means never)")
        problem = spec.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    read.__name__ = spec.kind.__name__  # argparse names the type in its own messages
    return read


def model_spec(text: str) -> str:
    """A model spec (ollama:MODEL, openai:MODEL, replay:SESSION, manual), checked as it is read; no
    client library is imported for it (engine/llm/spec.py)."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.spec import check_spec

    try:
        check_spec(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def ollama_host(text: str) -> str:
    """--host: an ollama server address, read as the ollama client reads it."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.addresses import ollama_address

    try:
        ollama_address(text.strip(), "--host")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--host ")) from None
    return text


def base_url(text: str) -> str:
    """--base-url: an OpenAI-compatible server's URL."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.llm.addresses import check_base_url

    try:
        return check_base_url(text, "--base-url")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--base-url ")) from None


def gpu_list(text: str) -> str:
    """--gpus: GPU indices ("0", "0,2"), or with --cluster a GPU model name ("H100"). Indices are
    checked for form here; whether this machine has them, when the GPUs are opened. A word is a
    model name, which only --cluster takes (checked with the other options)."""
    words = [w.strip() for w in text.split(",")]
    if not text.strip() or any(not w for w in words):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of GPUs such as 0 or 0,1")
    numbers = [w for w in words if w.isdigit()]
    if numbers and len(numbers) != len(words):
        raise argparse.ArgumentTypeError(f"{text!r} mixes GPU numbers and names: use numbers such as 0,1")
    if len(set(words)) != len(words):
        raise argparse.ArgumentTypeError(f"{text!r} names a GPU twice")
    return ",".join(words)


def session_id(text: str) -> int:
    """A recorded session's number (`--resume`, `export`, `replay`, `sessions rm`), within what the
    database can hold: a larger one was a traceback from the sqlite3 module."""
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.store.session_ids import session_number

    try:
        return session_number(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def gpu_index(text: str) -> str:
    """eval's --gpu: one device number."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU number such as 0")
    return text.strip()
