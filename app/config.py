"""The TUI's remembered choices and named model endpoints: a TOML file in the user's config folder.

    task = "vector_add"
    model = "ollama:qwen2.5-coder:32b"
    candidates = 4
    rounds = 5
    theme = "cuda-dark"
    cluster = "ray://head-node:10001"   # optional: judge on every GPU of this Ray cluster

    [keys]                     # move any key: binding id = "key[,key...]"
    "run.accept" = "y"
    "run.reject" = "x"

    [[endpoints]]
    name = "vllm-box"
    kind = "openai"            # or "ollama"
    url = "http://gpu-box:8000/v1"
    model = "Qwen/Qwen2.5-Coder-32B-Instruct"

The file is the user's: the app reads it and never writes it (its comments and any keys it does
not know stay as they are). What the app remembers on its own (the theme, the last task, model and
loop settings) goes to a state file beside it, tui-state.toml, whose values win over the config's
for those keys only; delete it to go back to the config's. Both are read with tomllib; the state
file is written by the tiny writer below (the standard library reads TOML but does not write it).
A file that cannot be read gives one line and the defaults: a broken config must never keep the
application from starting.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_llm.engine.core.errors import headline
from cuda_llm.engine.core.files import write_atomically
from cuda_llm.engine.core.paths import user_config_dir
from cuda_llm.engine.core.settings import KNOBS
from cuda_llm.engine.llm.spec import server_kinds

CONFIG_FILE = "tui.toml"
STATE_FILE = "tui-state.toml"  # beside the config: what the app remembers; the config stays the user's
# The choices the app remembers (in the state file). Not auto-accept: the TUI's point is to review, so
# a session starts with it off unless the config says otherwise; turning it on is for that session.
REMEMBERED = ("task", "model", "endpoint", "candidates", "rounds", "repairs", "patience", "target_roofline", "theme")


@dataclass(frozen=True)
class Endpoint:
    name: str
    kind: str  # a backend that talks to a server (engine/llm/spec.py server_kinds)
    url: str
    model: str = ""  # the model to ask for; empty: pick it on the start screen

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.model}" if self.model else ""


@dataclass(frozen=True)
class AppConfig:
    task: str | None = None
    model: str | None = None
    endpoint: str | None = None  # the named endpoint the model was picked from, if any
    # The loop's knobs start at the engine's defaults (engine/core/settings.py LOOP_KNOBS).
    candidates: int = int(KNOBS["candidates"].default)
    rounds: int = int(KNOBS["rounds"].default)
    repairs: int = int(KNOBS["repairs"].default)
    patience: int = int(KNOBS["patience"].default)  # 0: never stop for lack of progress
    target_roofline: float = float(KNOBS["target_roofline"].default)  # 0: never stop at a roofline share
    auto_accept: bool = False  # the TUI's point is to review; headless runs accept everything
    theme: str = "cuda-dark"
    # A Ray cluster to judge on (ray://HOST:10001, or auto on one of its nodes); --cluster overrides it.
    cluster: str | None = None
    endpoints: tuple[Endpoint, ...] = ()
    # Key overrides by binding id (the help screen and README list the ids), e.g. "run.accept" = "y".
    keys: tuple[tuple[str, str], ...] = ()

    def endpoint_named(self, name: str | None) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)


def config_path() -> Path:
    return user_config_dir() / CONFIG_FILE


@dataclass(frozen=True)
class Loaded:
    config: AppConfig
    warning: str | None = None  # one line when the file was unusable (the defaults are used)


def state_path(config: Path | None = None) -> Path:
    """The app's own state file, beside the config file."""
    return (config or config_path()).with_name(STATE_FILE)


def _read(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"cannot read {path} ({exc.strerror}); using the defaults"
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        _from_dict(data)  # checked as a whole: one bad value and the file is not used
        return data, None
    except RecursionError:  # arrays or tables nested thousands deep: the parser's stack ends first
        return {}, f"{path} is not a usable config (nested too deeply); using the defaults"
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, TypeError, ValueError) as exc:
        reason = headline(str(exc)) or type(exc).__name__
        return {}, f"{path} is not a usable config ({reason}); using the defaults"


def load_config(path: Path | None = None, *, with_state: bool = True) -> Loaded:
    """The config file, with the app's remembered choices (its state file) over it."""
    path = path or config_path()
    data, warning = _read(path)
    if with_state:
        state, state_warning = _read(state_path(path))
        data = {**data, **{k: v for k, v in state.items() if k in REMEMBERED}}
        warning = warning or state_warning
    return Loaded(_from_dict(data), warning)


def save_state(config: AppConfig, path: Path | None = None) -> str | None:
    """Write the remembered choices to the state file beside the config (`path`); the config file
    itself is never written. One line if it could not be written (never raises)."""
    target = state_path(path)
    lines = [
        "# cuda-llm TUI: the last choices, remembered by the app (it rewrites this file; your settings go in",
        f"# {(path or config_path()).name}, which the app never writes). Delete this file to forget them.",
    ]
    for name in REMEMBERED:
        value = getattr(config, name)
        # Text that is not Unicode (a lone surrogate, as a server's model list may carry) cannot be
        # written as UTF-8: that choice is not remembered, and the others still are.
        if value is not None and _writable(value):
            lines.append(f"{_key(name)} = {toml_value(value)}")
    try:
        write_atomically(target, "\n".join(lines) + "\n")
    except OSError as exc:
        return f"cannot save the app's state to {target} ({exc.strerror})"
    return None


def _writable(value: object) -> bool:
    """Whether a value can be written to a UTF-8 file (str: no lone surrogates)."""
    try:
        str(value).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _from_dict(data: dict[str, Any]) -> AppConfig:
    defaults = AppConfig()
    values: dict[str, Any] = {}
    for f in dataclasses.fields(AppConfig):
        if f.name in ("endpoints", "keys") or f.name not in data:
            continue
        value = data[f.name]
        expected = type(getattr(defaults, f.name)) if getattr(defaults, f.name) is not None else str
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise TypeError(f"{f.name} must be {expected.__name__}, got {type(value).__name__}")
        values[f.name] = value
    endpoints = []
    for i, item in enumerate(data.get("endpoints", [])):
        if not isinstance(item, dict):
            raise TypeError(f"endpoints[{i}] must be a table")
        try:
            ep = Endpoint(str(item["name"]), str(item["kind"]), str(item["url"]), str(item.get("model", "")))
        except KeyError as exc:
            raise ValueError(f"endpoints[{i}] needs {exc.args[0]}") from None
        if ep.kind not in (kinds := server_kinds()):
            raise ValueError(f"endpoints[{i}].kind must be one of {', '.join(kinds)}")
        endpoints.append(ep)
    keys = data.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
        raise TypeError('keys must be a table of "binding id" = "key" strings')
    return AppConfig(**values, endpoints=tuple(endpoints), keys=tuple(sorted(keys.items())))


def save_config(config: AppConfig, path: Path | None = None) -> str | None:
    """Write the config atomically; returns one line if it could not be written (never raises)."""
    path = path or config_path()
    try:
        write_atomically(path, to_toml(config))
    except OSError as exc:
        return f"cannot save the config to {path} ({exc.strerror})"
    except UnicodeEncodeError:
        return f"cannot save the config to {path}: a value is not valid Unicode text (a lone surrogate)"
    return None


# ---- a tiny TOML writer: flat keys, and arrays of flat tables ------------------------------------


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _key(name: str) -> str:
    bare = name and all(c.isalnum() or c in "-_" for c in name)
    return name if bare else _string(name)


def to_toml(config: AppConfig) -> str:
    lines = ["# cuda-llm TUI settings: the last choices and named model endpoints (edit freely)."]
    for f in dataclasses.fields(AppConfig):
        value = getattr(config, f.name)
        if f.name in ("endpoints", "keys") or value is None:
            continue  # TOML has no null: a missing key reads back as the default
        lines.append(f"{_key(f.name)} = {toml_value(value)}")
    if config.keys:
        lines += ["", "[keys]"]
        lines += [f"{_key(k)} = {toml_value(v)}" for k, v in config.keys]
    for ep in config.endpoints:
        lines += ["", "[[endpoints]]"]
        lines += [f"{_key(k)} = {toml_value(v)}" for k, v in dataclasses.asdict(ep).items()]
    return "\n".join(lines) + "\n"


def remember(config: AppConfig, **changes: Any) -> AppConfig:
    return dataclasses.replace(config, **changes)


__all__ = [
    "AppConfig",
    "Endpoint",
    "Loaded",
    "load_config",
    "remember",
    "save_config",
    "save_state",
    "state_path",
    "to_toml",
]
