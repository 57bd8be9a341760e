"""parse_plan: the structure of the JSON launch plan (names and types are binding's job)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.task.plan import (
    MAX_ARGS,
    MAX_LAUNCHES,
    MAX_SCRATCH,
    Launch,
    PlanArg,
    ScratchBuffer,
    parse_plan,
)

DESIGN_EXAMPLE = {
    "scratch": [{"name": "partial", "dtype": "float32", "count": "cdiv(n, 1024)"}],
    "launches": [
        {
            "kernel": "block_sums",
            "grid": ["cdiv(n, 1024)"],
            "block": [256],
            "shared_bytes": 0,
            "args": ["x", "partial", "n"],
        },
        {"kernel": "final_sum", "grid": [1], "block": [1024], "args": ["partial", "out", "cdiv(n, 1024)"]},
    ],
}


def launch(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"kernel": "k", "grid": [1], "block": [32], "args": ["x"]}
    base.update(overrides)
    return base


def plan_error(data: Any) -> str:
    with pytest.raises(FormatError) as info:
        parse_plan(data)
    return str(info.value)


def test_design_example_parses() -> None:
    plan = parse_plan(DESIGN_EXAMPLE)
    assert plan.scratch == (ScratchBuffer("partial", "float32", "cdiv(n, 1024)"),)
    assert plan.launches[0] == Launch(
        "block_sums",
        ("cdiv(n, 1024)",),
        ("256",),
        "0",
        (PlanArg("x"), PlanArg("partial"), PlanArg("n")),
    )
    second = plan.launches[1]
    assert second.shared_bytes == "0"  # absent: no dynamic shared memory
    assert second.grid == ("1",) and second.block == ("1024",)
    assert second.args[2] == PlanArg("cdiv(n, 1024)")


def test_json_text_and_bytes_parse_like_objects() -> None:
    text = json.dumps(DESIGN_EXAMPLE)
    assert parse_plan(text) == parse_plan(DESIGN_EXAMPLE) == parse_plan(text.encode())


def test_to_json_round_trips() -> None:
    plan = parse_plan(
        DESIGN_EXAMPLE
        | {
            "launches": [
                *DESIGN_EXAMPLE["launches"],
                launch(args=[{"expr": "n", "type": "int64"}, 7, "-3"], shared_bytes="4 * 256"),
            ]
        }
    )
    data = plan.to_json()
    assert data["launches"][1]["grid"] == [1]  # literals come back as numbers
    assert data["launches"][2]["args"] == [{"expr": "n", "type": "int64"}, "7", "-3"]
    assert parse_plan(json.loads(json.dumps(data))) == plan


def test_to_json_keeps_expressions_that_only_look_numeric() -> None:
    plan = parse_plan({"launches": [launch(grid=["--4"])]})
    assert plan.to_json()["launches"][0]["grid"] == ["--4"]


def test_scalar_grid_and_block_become_lists() -> None:
    plan = parse_plan({"launches": [launch(grid="cdiv(n, 128)", block=128)]})
    assert plan.launches[0].grid == ("cdiv(n, 128)",)
    assert plan.launches[0].block == ("128",)


def test_typed_arguments() -> None:
    plan = parse_plan({"launches": [launch(args=[{"expr": "n", "type": "int64"}, {"expr": "n * 2"}])]})
    assert plan.launches[0].args == (PlanArg("n", "int64"), PlanArg("n * 2", "int32"))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('{"launches": [', "not valid JSON"),
        ('{"launches": [}', "at line 1 column"),
        ("[" * 100_000, "nested too deeply"),
        ("1" * 5000, "not a usable JSON value"),
        ([], 'must be a JSON object with "launches"'),
        ({"launches": [launch()], "kernels": []}, "unknown key(s) ['kernels']"),
        ({}, '"launches" must be a non-empty list'),
        ({"launches": []}, '"launches" must be a non-empty list'),
        ({"launches": {"kernel": "k"}}, '"launches" must be a non-empty list'),
        ({"launches": [launch()] * (MAX_LAUNCHES + 1)}, f"at most {MAX_LAUNCHES} launches"),
        ({"launches": ["k"]}, "launches[0] must be an object"),
        ({"launches": [launch(threads=3)]}, "launches[0]: unknown key(s) ['threads']"),
    ],
)
def test_top_level_and_launch_list_errors(data: Any, expected: str) -> None:
    assert expected in plan_error(data)


@pytest.mark.parametrize("key", ["kernel", "grid", "block", "args"])
def test_missing_launch_key_is_named(key: str) -> None:
    data = launch()
    del data[key]
    assert f'launches[0] has no "{key}"' in plan_error({"launches": [data]})


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"kernel": "my-kernel"}, "launches[0].kernel must be a C identifier"),
        ({"kernel": "noyau_é"}, "launches[0].kernel must be a C identifier"),
        ({"kernel": 3}, "launches[0].kernel must be a C identifier"),
        ({"grid": [1, 1, 1, 1]}, "launches[0].grid must be a list of 1 to 3 sizes"),
        ({"grid": []}, "launches[0].grid must be a list of 1 to 3 sizes"),
        ({"block": [1.5]}, "launches[0].block[0] must be an integer or an expression string"),
        ({"block": [True]}, "launches[0].block[0] must be an integer or an expression string"),
        ({"grid": ["n / 256"]}, "use // for integer division"),
        ({"shared_bytes": None}, "launches[0].shared_bytes must be an integer or an expression"),
        ({"shared_bytes": "smem"}, None),  # a name: structure is fine, binding checks names
        ({"args": "x, y"}, "launches[0].args must be a list"),
        ({"args": ["x"] * (MAX_ARGS + 1)}, f"has {MAX_ARGS + 1} items; at most {MAX_ARGS}"),
        ({"args": [{"type": "int64"}]}, 'an object argument is {"expr": "...", "type": "int64"}'),
        ({"args": [{"expr": "n", "kind": "int"}]}, 'an object argument is {"expr"'),
        ({"args": [{"expr": "n", "type": "int16"}]}, 'type must be "int32" or "int64", got \'int16\''),
        ({"args": [1.5]}, "args[0] must name a buffer, a scalar or an integer expression"),
        ({"args": [None]}, "args[0] must name a buffer, a scalar or an integer expression"),
        ({"args": ["x", "n ** 2"]}, "launches[0].args[1]: 'n ** 2': operator not allowed"),
    ],
)
def test_launch_field_errors(overrides: dict[str, Any], expected: str | None) -> None:
    data = {"launches": [launch(**overrides)]}
    if expected is None:
        parse_plan(data)
    else:
        assert expected in plan_error(data)


@pytest.mark.parametrize(
    ("scratch", "expected"),
    [
        ({"name": "p"}, '"scratch" must be a list'),
        ([{"name": "p", "dtype": "float32"}], 'scratch[0] must be {"name": ..., "dtype": ..., "count"'),
        ([{"name": "p", "dtype": "float32", "count": 1, "init": 0}], "scratch[0] must be {"),
        (["p"], "scratch[0] must be {"),
        ([{"name": "p", "dtype": "float33", "count": 1}], "scratch[0].dtype 'float33' unknown; one of"),
        ([{"name": "p", "dtype": ["float32"], "count": 1}], "scratch[0].dtype ['float32'] unknown"),
        ([{"name": "2p", "dtype": "float32", "count": 1}], "scratch[0].name must be a C identifier"),
        ([{"name": "p", "dtype": "float32", "count": "n / 2"}], "scratch[0].count: 'n / 2'"),
        ([{"name": "p", "dtype": "float32", "count": 1.5}], "scratch[0].count must be an integer"),
        ([{"name": "p", "dtype": "float32", "count": 1}] * 2, "scratch buffer 'p' declared twice"),
        (
            [{"name": f"p{i}", "dtype": "float32", "count": 1} for i in range(MAX_SCRATCH + 1)],
            f"at most {MAX_SCRATCH} buffers",
        ),
    ],
)
def test_scratch_errors(scratch: Any, expected: str) -> None:
    assert expected in plan_error({"scratch": scratch, "launches": [launch()]})


def test_every_dtype_in_the_error_list_is_accepted() -> None:
    message = plan_error({"scratch": [{"name": "p", "dtype": "f32", "count": 1}], "launches": [launch()]})
    listed = json.loads(message.split("one of ")[1].replace("'", '"'))
    for dtype in listed:
        plan = parse_plan({"scratch": [{"name": "p", "dtype": dtype, "count": 1}], "launches": [launch()]})
        assert plan.scratch[0].dtype == dtype
