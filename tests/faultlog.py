"""The fault-injection suite's bookkeeping (a pytest plugin loaded by tests/conftest.py, so GPU
negative controls elsewhere report too): every test names its fault and the outcome it expects
(`@pytest.mark.fault(...)`) and reports what it observed (the `observed` fixture). With
CUDA_LLM_FAULT_REPORT=path.json set, the rows (fault, expected, observed, passed, device) are
written there at the end of the run; bench/reliability.py turns them into docs/reliability.md."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field

import pytest

REPORT_ENV = "CUDA_LLM_FAULT_REPORT"


@dataclass
class FaultRow:
    group: str
    fault: str
    expected: str
    observed: str = ""
    outcome: str = "not run"
    test: str = ""


@dataclass
class FaultLog:
    rows: list[FaultRow] = field(default_factory=list)
    device: str = "CPU only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fault(group, fault, expected): a row of docs/reliability.md")
    config.stash[_LOG] = log = FaultLog()
    config.pluginmanager.register(_RowCollector(log), "faultlog-rows")


_LOG = pytest.StashKey[FaultLog]()
_ROW, _DEVICE = "fault_row", "fault_device"
_OBSERVED = pytest.StashKey[list]()


@pytest.fixture
def observed(request: pytest.FixtureRequest):
    """Call observed("...") with what happened; the last call is the table's 'observed' cell."""
    notes: list[str] = []
    request.node.stash[_OBSERVED] = notes
    return notes.append


@pytest.fixture(scope="session")
def fault_device(request: pytest.FixtureRequest):
    """Tests that ran on a GPU set the device name here for the table."""
    log = request.config.stash[_LOG]

    def set_device(name: str) -> None:
        log.device = name

    return set_device


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("fault")
    if marker is None or report.when not in ("setup", "call"):
        return
    if report.when == "setup" and report.passed:
        return
    group, fault, expected = marker.args
    notes = item.stash.get(_OBSERVED, [])
    if report.skipped:
        state, seen = "skipped", str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else "skipped"
    elif report.passed:
        state, seen = "as expected", notes[-1] if notes else "as expected"
    else:
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None) or str(report.longrepr)
        state, seen = "FAILED", (notes[-1] + "; " if notes else "") + crash.splitlines()[0][:300]
    # Carried on the report, so that with parallel workers (pytest-xdist) the row reaches the
    # process that writes the file: the controller sees every report, a worker only its own.
    report.user_properties.append((_ROW, asdict(FaultRow(group, fault, expected, seen, state, item.nodeid))))
    report.user_properties.append((_DEVICE, item.config.stash[_LOG].device))


@dataclass(eq=False)  # hashable by identity, as the plugin manager needs
class _RowCollector:
    """Gathers the rows from the reports (registered as a plugin: the hook is given no config)."""

    log: FaultLog

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == _ROW:
                self.log.rows.append(FaultRow(**value))
            elif name == _DEVICE and value != FaultLog.device:
                self.log.device = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path or hasattr(session.config, "workerinput"):  # an xdist worker: the controller writes
        return
    log = session.config.stash[_LOG]
    payload = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "device": log.device,
        "host": platform.node(),
        "rows": [asdict(r) for r in log.rows],
    }
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=2)
