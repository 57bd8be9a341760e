"""Every async TUI test runs under a time limit: an app that never becomes ready, or a screen that
waits for something that never comes, fails the test with a clear message instead of hanging the
suite (pytest-timeout is not a dependency; this is the one place that needs it)."""

from __future__ import annotations

import asyncio
import functools
import inspect

import pytest

# A whole session through the TUI takes a few seconds; a loaded 2-core CI machine, several times that.
TEST_TIMEOUT_S = 180.0


def _limited(test, seconds: float):
    @functools.wraps(test)
    async def limited(*args, **kwargs):
        try:
            return await asyncio.wait_for(test(*args, **kwargs), seconds)
        except TimeoutError:
            pytest.fail(f"{test.__name__} did not finish within {seconds:.0f} s (the app hung?)", pytrace=False)

    return limited


@pytest.fixture(autouse=True)
def _a_terminal(monkeypatch):
    """The tests drive the launcher under pytest, whose output is no terminal: the UI's refusal to
    start without one (app/main.py) is tested in a child process (tests/test_mistakes.py)."""
    from cuda_llm.app import main

    monkeypatch.setattr(main, "terminal_missing", lambda: None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        test = getattr(item, "obj", None)
        if inspect.iscoroutinefunction(test) and str(item.path).startswith(str(__file__).rsplit("/", 1)[0]):
            item.obj = _limited(test, TEST_TIMEOUT_S)
