"""Read what `ncu --csv --print-units base --log-file FILE` wrote: its `==PROF==`/`==ERROR==` lines
and the metrics table.

Two table shapes are accepted, so an ncu that prints either works: the details page (ncu's default:
one row per metric of a launch, columns "ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric
Value") and the raw page (`--page raw`: one row per launch, one column per metric, a row of units
first). Values may carry thousands separators ("536,870,912") and prefixed units when base units
were not asked for; both are normalised to bytes, nanoseconds and plain numbers.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from cuda_llm.engine.counters.metrics import SECTION_NAMES

# Units to base units (bytes, nanoseconds); anything else (%, block, sector, warp, inst) stays as is.
_UNIT_SCALE = {
    "byte": 1.0,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
    "kibyte": 2.0**10,
    "mibyte": 2.0**20,
    "gibyte": 2.0**30,
    "nsecond": 1.0,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "ns": 1.0,
    "us": 1e3,
    "ms": 1e6,
}
_ID_COLUMN = "ID"


@dataclass(frozen=True)
class NcuRow:
    """One profiled kernel launch, as ncu numbered it."""

    id: int
    kernel: str
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NcuOutput:
    rows: tuple[NcuRow, ...]
    errors: tuple[str, ...]  # the ==ERROR== lines, without the prefix
    warnings: tuple[str, ...]  # the ==WARNING== lines


def number(text: str, unit: str = "") -> float | None:
    """ncu's value text as a number in base units; None for n/a, empty or anything not a number."""
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        value = float(t)
    except ValueError:
        return None
    return value * _UNIT_SCALE.get(unit.strip().lower(), 1.0)


def kernel_base(name: str) -> str:
    """'vector_add(const float *, float *, int)' and 'void foo<4>(float*)' -> the bare function name."""
    head = name.strip().split("(", 1)[0].strip()
    head = head.split("<", 1)[0].strip()
    return head.split()[-1] if head else name.strip()


def _messages(text: str, tag: str) -> tuple[str, ...]:
    prefix = f"=={tag}=="
    return tuple(line[len(prefix) :].strip() for line in text.splitlines() if line.startswith(prefix))


def _table(text: str) -> list[list[str]]:
    """The CSV rows from the first header line on (ncu's own messages and the program's output dropped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{_ID_COLUMN}",')), None)
    if start is None:
        return []
    body = [line for line in lines[start:] if line.startswith('"')]
    return [row for row in csv.reader(io.StringIO("\n".join(body))) if row]


def _long(header: list[str], rows: list[list[str]]) -> tuple[NcuRow, ...]:
    col = {name: i for i, name in enumerate(header)}
    i_id, i_kernel = col[_ID_COLUMN], col.get("Kernel Name")
    i_name, i_unit, i_value = col["Metric Name"], col.get("Metric Unit"), col["Metric Value"]
    launches: dict[int, tuple[str, dict[str, float]]] = {}
    for row in rows:
        if len(row) <= max(i_id, i_name, i_value):
            continue
        try:
            launch_id = int(row[i_id])
        except ValueError:
            continue
        kernel = row[i_kernel] if i_kernel is not None and i_kernel < len(row) else ""
        unit = row[i_unit] if i_unit is not None and i_unit < len(row) else ""
        _, values = launches.setdefault(launch_id, (kernel, {}))
        value = number(row[i_value], unit)
        if value is not None:
            values[row[i_name].strip()] = value
    return tuple(NcuRow(i, k, v) for i, (k, v) in sorted(launches.items()))


def _wide(header: list[str], rows: list[list[str]]) -> tuple[NcuRow, ...]:
    col = {name: i for i, name in enumerate(header)}
    i_id, i_kernel = col[_ID_COLUMN], col.get("Kernel Name")
    metric_cols = [(i, name) for i, name in enumerate(header) if "__" in name]
    units: dict[int, str] = {}
    out = []
    for row in rows:
        if len(row) < len(header):
            continue
        if not row[i_id].strip():  # the units row
            units = {i: row[i] for i, _ in metric_cols}
            continue
        try:
            launch_id = int(row[i_id])
        except ValueError:
            continue
        values = {name: v for i, name in metric_cols if (v := number(row[i], units.get(i, ""))) is not None}
        out.append(NcuRow(launch_id, row[i_kernel] if i_kernel is not None else "", values))
    return tuple(sorted(out, key=lambda r: r.id))


def _with_our_names(row: NcuRow) -> NcuRow:
    """A row with the set's metric names filled from the names ncu's sections give the same counters."""
    found = {
        ours: row.values[theirs] * factor
        for ours, (theirs, factor) in SECTION_NAMES.items()
        if ours not in row.values and theirs in row.values
    }
    return NcuRow(row.id, row.kernel, {**row.values, **found}) if found else row


def parse(text: str) -> NcuOutput:
    table = _table(text)
    rows: tuple[NcuRow, ...] = ()
    if table:
        header, body = [h.strip() for h in table[0]], table[1:]
        rows = _long(header, body) if "Metric Name" in header and "Metric Value" in header else _wide(header, body)
    return NcuOutput(tuple(_with_our_names(r) for r in rows), _messages(text, "ERROR"), _messages(text, "WARNING"))


_METRIC_NAME = re.compile(r"[a-z0-9]+__[A-Za-z0-9_.]+")


def unknown_metrics(errors: tuple[str, ...], asked: tuple[str, ...]) -> tuple[str, ...]:
    """The metrics an ncu error line says it does not know (an older or newer ncu than ours): they are
    dropped and the run repeated, rather than losing every counter to one name."""
    named = {m.rstrip(".") for line in errors if "metric" in line.lower() for m in _METRIC_NAME.findall(line)}
    return tuple(m for m in asked if m in named)
