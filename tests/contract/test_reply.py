"""parse_reply: from a model's raw reply to (explanation, source, plan)."""

from __future__ import annotations

import json

import pytest

from cuda_llm.engine.contract.reply import MAX_REPLY_BYTES, parse_reply
from cuda_llm.engine.core.errors import FormatError

KERNELS = """\
#include <cuda_fp16.h>

// Each block reduces 1024 elements: 256 threads, 4 loads each.
extern "C" __global__ void block_sums(const float* __restrict__ x, float* partial, int n)
{
    __shared__ float tile[256];
    float acc = 0.0f;
    for (int i = blockIdx.x * 1024 + threadIdx.x; i < min(n, (blockIdx.x + 1) * 1024); i += 256)
        acc += x[i];
    tile[threadIdx.x] = acc;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = tile[0];
}

extern "C" __global__ void final_sum(const float* partial, float* out, int count)
{
    __shared__ float tile[1024];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < count; i += 1024) acc += partial[i];
    tile[threadIdx.x] = acc;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = tile[0];
}
"""

PLAN = """\
{
  "scratch": [{"name": "partial", "dtype": "float32", "count": "cdiv(n, 1024)"}],
  "launches": [
    {"kernel": "block_sums", "grid": ["cdiv(n, 1024)"], "block": [256], "shared_bytes": 0,
     "args": ["x", "partial", "n"]},
    {"kernel": "final_sum", "grid": [1], "block": [1024], "args": ["partial", "out", "cdiv(n, 1024)"]}
  ]
}"""

SMALL_CODE = 'extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 0; }'
SMALL_PLAN = '{"launches": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "n"]}]}'


def reply(
    code: str = SMALL_CODE,
    plan: str = SMALL_PLAN,
    code_fence: str = "```cuda",
    plan_fence: str = "```json",
    before: str = "Here it is.\n\n",
    between: str = "\n",
    after: str = "",
) -> str:
    close_code = "".join(ch for ch in code_fence if ch in "`~")
    close_plan = "".join(ch for ch in plan_fence if ch in "`~")
    return f"{before}{code_fence}\n{code}\n{close_code}\n{between}{plan_fence}\n{plan}\n{close_plan}\n{after}"


def error_of(text: str, **kwargs: int) -> str:
    with pytest.raises(FormatError) as info:
        parse_reply(text, **kwargs)
    return str(info.value)


# --- good replies -----------------------------------------------------------------------------


def test_realistic_two_launch_reduction() -> None:
    text = (
        "The first kernel reduces 1024 elements per block into `partial`; the second sums the "
        "partials.\n\n```cuda\n"
        + KERNELS
        + "```\n\nLaunch plan:\n\n```json\n"
        + PLAN
        + "\n```\n\nThis should reach close to the memory bandwidth.\n"
    )
    parsed = parse_reply(text)
    assert parsed.source == KERNELS
    assert parsed.plan_json == PLAN
    assert [la.kernel for la in parsed.plan.launches] == ["block_sums", "final_sum"]
    assert parsed.plan.scratch[0].name == "partial"
    assert parsed.plan.scratch[0].count == "cdiv(n, 1024)"
    assert parsed.explanation.startswith("The first kernel reduces 1024 elements per block")
    assert "Launch plan:" in parsed.explanation
    assert parsed.explanation.endswith("close to the memory bandwidth.")
    assert "__global__" not in parsed.explanation
    assert '"launches"' not in parsed.explanation


@pytest.mark.parametrize(
    "label", ["cuda", "cu", "c++", "cpp", "c", "CUDA", "Cuda", "cuda title=kernel.cu", "{.cuda}", ""]
)
def test_code_fence_labels(label: str) -> None:
    parsed = parse_reply(reply(code_fence="```" + label))
    assert parsed.source == SMALL_CODE + "\n"


def test_unlabeled_plan_block_is_the_plan() -> None:
    parsed = parse_reply(reply(plan_fence="```"))
    assert parsed.plan.launches[0].kernel == "k"


def test_both_blocks_unlabeled() -> None:
    parsed = parse_reply(reply(code_fence="```", plan_fence="```"))
    assert parsed.source.startswith('extern "C"')
    assert parsed.plan.launches[0].args[1].text == "n"


def test_plan_before_code() -> None:
    text = f"```json\n{SMALL_PLAN}\n```\n\n```cuda\n{SMALL_CODE}\n```\n"
    parsed = parse_reply(text)
    assert parsed.source == SMALL_CODE + "\n"
    assert parsed.plan.launches[0].kernel == "k"


def test_tilde_fences() -> None:
    parsed = parse_reply(reply(code_fence="~~~cuda", plan_fence="~~~json"))
    assert parsed.source == SMALL_CODE + "\n"


def test_four_backtick_fence_holds_triple_backticks() -> None:
    code = "// usage:\n// ```\n// k<<<1, 32>>>(x, n);\n// ```\n" + SMALL_CODE
    parsed = parse_reply(reply(code=code, code_fence="````cuda"))
    assert parsed.source == code + "\n"


def test_tilde_fence_is_not_closed_by_backticks() -> None:
    code = "// ```\n" + SMALL_CODE
    parsed = parse_reply(reply(code=code, code_fence="~~~cuda"))
    assert parsed.source == code + "\n"


def test_fences_inside_a_list_item_lose_their_indentation() -> None:
    text = (
        '1. The kernel:\n\n   ```cuda\n   extern "C" __global__ void k(float* x, int n)\n   {\n'
        "       x[0] = n;\n   }\n   ```\n2. The plan:\n\n   ```json\n   " + SMALL_PLAN + "\n   ```\n"
    )
    parsed = parse_reply(text)
    assert parsed.source == 'extern "C" __global__ void k(float* x, int n)\n{\n    x[0] = n;\n}\n'
    assert parsed.plan.launches[0].kernel == "k"


def test_other_languages_are_left_alone() -> None:
    text = reply(
        after="Compare with the host loop:\n\n```python\nfor i in range(n): c[i] = a[i]\n```\n"
        "\n```text\nspeedup 3x\n```\n"
    )
    parsed = parse_reply(text)
    assert parsed.source == SMALL_CODE + "\n"
    assert "```python" in parsed.explanation


def test_unlabeled_block_that_is_not_cuda_is_prose() -> None:
    parsed = parse_reply(reply(before="Output:\n```\n3.0 4.0\n```\n"))
    assert parsed.source == SMALL_CODE + "\n"


def test_plan_mislabelled_as_cuda_is_still_the_plan() -> None:
    parsed = parse_reply(reply(plan_fence="```cuda"))
    assert parsed.plan.launches[0].kernel == "k"
    assert parsed.source == SMALL_CODE + "\n"


def test_crlf_line_endings_and_bom() -> None:
    text = "\ufeff" + reply().replace("\n", "\r\n")
    parsed = parse_reply(text)
    assert parsed.source == SMALL_CODE + "\n"
    assert "\r" not in parsed.source


def test_stray_fence_at_the_end_is_ignored() -> None:
    parsed = parse_reply(reply(after="```\n"))
    assert parsed.plan.launches[0].kernel == "k"


def test_leading_think_section_is_not_part_of_the_answer() -> None:
    draft = "<think>\nFirst try:\n```cuda\n__global__ void draft() {}\n```\nBetter:\n```cuda\nx\n```\n</think>\n"
    parsed = parse_reply(draft + reply())
    assert parsed.source == SMALL_CODE + "\n"
    assert "draft" not in parsed.explanation and "<think>" not in parsed.explanation


def test_line_numbers_count_the_think_section() -> None:
    text = "<think>\na\nb\n</think>\n" + reply(plan="{oops}")
    # Lines 1-4 think, 5-6 prose, 7-9 the code block, 10 blank: the plan opens on line 11 of
    # the text as sent.
    assert "```json block on line 11" in error_of(text)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t\n", "<think>pondering</think>\n\n"])
def test_empty_reply(text: str) -> None:
    message = error_of(text)
    assert "the reply is empty" in message
    assert "```cuda" in message and "```json" in message


def test_reply_ending_inside_think() -> None:
    message = error_of("<think>\nLet me consider tiling...\n```cuda\n__global__")
    assert "ended inside <think>" in message


def test_prose_only_reply() -> None:
    message = error_of("I would use shared memory tiling and vector loads.")
    assert "no CUDA code block found" in message
    assert "one fenced ```cuda block" in message
    assert "no launch plan found" in message


def test_code_in_the_wrong_language_is_named() -> None:
    message = error_of(reply(code_fence="```python"))
    assert "no CUDA code block found" in message
    assert "```python block on line 3" in message


def test_two_code_blocks() -> None:
    text = reply(between="\nAnd a helper:\n\n```cuda\n__device__ float sq(float v) { return v * v; }\n```\n\n")
    message = error_of(text)
    assert "found 2 CUDA code blocks (opening on lines 3, 9)" in message
    assert "put all kernels in one ```cuda block" in message


def test_ten_code_blocks() -> None:
    blocks = "".join(f"Kernel {i}:\n```cuda\n__global__ void k{i}() {{}}\n```\n" for i in range(10))
    message = error_of(blocks + f"```json\n{SMALL_PLAN}\n```\n")
    assert "found 10 CUDA code blocks (opening on lines 2, 6, 10, 14, 18, 22 and 4 more)" in message
    assert "put all kernels in one ```cuda block" in message


def test_no_plan() -> None:
    message = error_of(f"```cuda\n{SMALL_CODE}\n```\nLaunch it with 256 threads.")
    assert "no launch plan found" in message
    assert '```json block holding {"launches": [' in message
    assert "no CUDA code block" not in message


def test_two_plans() -> None:
    text = reply(after=f"\nOr for large n:\n\n```json\n{SMALL_PLAN}\n```\n")
    message = error_of(text)
    assert "found 2 launch plans (```json blocks opening on lines 7, 13)" in message
    assert "give exactly one" in message


def test_invalid_json_gives_line_column_and_the_line() -> None:
    plan = '{\n  "launches": [\n    {"kernel": "k" "grid": [1], "block": [32], "args": []}\n  ]\n}'
    message = error_of(reply(plan=plan))
    assert "launch plan (the ```json block on line 7): not valid JSON" in message
    assert "Expecting ',' delimiter at line 3, column 20 of the block" in message
    assert '{"kernel": "k" "grid": [1]' in message
    assert message.rstrip().endswith("^")


def test_trailing_comma_hint() -> None:
    plan = '{"launches": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "n"],}]}'
    assert "Remove the trailing comma before '}'" in error_of(reply(plan=plan))


def test_comment_hint_ignores_floor_division_in_strings() -> None:
    plan = '{"launches": [  // one launch\n {"kernel": "k", "grid": ["n // 2"], "block": [32], "args": []}]}'
    assert "JSON allows no comments" in error_of(reply(plan=plan))
    plan = '{"launches": [{"kernel": "k", "grid": ["n // 2"], "block": [32], "args": [x]}]}'
    assert "JSON allows no comments" not in error_of(reply(plan=plan))


def test_single_quote_hint() -> None:
    plan = "{'launches': []}"
    assert "JSON strings use double quotes" in error_of(reply(plan=plan))


def test_two_objects_in_one_block() -> None:
    plan = SMALL_PLAN + "\n" + SMALL_PLAN
    message = error_of(reply(plan=plan))
    assert "Extra data" in message and "exactly one JSON object" in message


def test_deeply_nested_json_in_a_block() -> None:
    message = error_of(reply(plan='{"launches": ' + "[" * 50_000 + "]" * 50_000 + "}"))
    assert "nested too deeply" in message


def test_plan_structure_errors_come_from_parse_plan() -> None:
    message = error_of(reply(plan='{"launches": [{"kernel": "k", "grid": [1], "block": [32]}]}'))
    assert message == 'launch plan: launches[0] has no "args"'


def test_reply_cut_off_in_the_code() -> None:
    text = "Here:\n\n```cuda\n" + KERNELS[:300]
    message = error_of(text)
    assert "the reply was cut off: the ```cuda block opened on line 3 is never closed" in message


def test_reply_cut_off_in_the_plan() -> None:
    text = reply()[: -len("\n```\n") - 10]
    message = error_of(text)
    assert "the reply was cut off: the ```json block opened on line 7 is never closed" in message


def test_closing_fence_glued_to_code() -> None:
    text = f"```cuda\n{SMALL_CODE}```\n\n```json\n{SMALL_PLAN}\n```\n"
    message = error_of(text)
    assert "the ```cuda block opened on line 1 is not closed before the fence on line 4" in message
    assert "Line 2 ends with ``` after other text" in message


def test_reply_over_the_size_limit() -> None:
    text = reply(after="x" * MAX_REPLY_BYTES)
    message = error_of(text)
    assert f"over the {MAX_REPLY_BYTES}-byte limit" in message
    assert f"the reply is {len(text.encode())} bytes" in message


def test_size_limit_counts_utf8_bytes() -> None:
    # 600 000 characters, 1 200 000 bytes.
    text = reply(after="é" * 600_000)
    assert len(text) < MAX_REPLY_BYTES
    assert "-byte limit" in error_of(text)


def test_size_limit_is_a_parameter() -> None:
    assert "over the 100-byte limit" in error_of(reply(), max_bytes=100)
    assert parse_reply(reply(), max_bytes=10_000).plan.launches


def test_nul_byte_in_source() -> None:
    code = SMALL_CODE.replace("if (", "if \x00(")
    column = code.index("\x00") + 1
    message = error_of(reply(code=code))
    assert f"a NUL byte (U+0000) at line 1, column {column} of the code block" in message
    assert "block opens on line 3" in message


def test_lone_surrogate_in_source() -> None:
    code = "// caf\ud83d\n" + SMALL_CODE
    message = error_of(reply(code=code))
    assert "a lone surrogate (U+D83D) at line 1, column 7" in message


def test_empty_code_block() -> None:
    assert "the ```cuda block on line 3 is empty" in error_of(reply(code="  \n"))


def test_plan_json_is_exactly_what_was_written() -> None:
    plan = json.dumps(json.loads(PLAN), indent=4)
    assert parse_reply(reply(code=KERNELS, plan=plan)).plan_json == plan


def test_mutated_replies_fail_only_with_format_errors() -> None:
    """Random damage to a good reply (seeded): the contract either accepts it or says why in a
    FormatError; no other exception may escape to the loop."""
    import random

    from cuda_llm.engine.contract.binding import bind_plan
    from cuda_llm.engine.contract.signature import parse_kernels

    from .conftest import build_task

    task = build_task(buffers={"x": ("float32", ("n",), "input"), "out": ("float32", ("1",), "output")})
    good = f"Here.\n```cuda\n{KERNELS}```\n```json\n{PLAN}\n```\n"
    pieces = [
        *'`~{}[]()",:;*&<>#\\/\n \x00abnx019-_',
        "```",
        "```cuda\n",
        "```json\n",
        "__global__",
        'extern "C"',
        "const ",
        "template<int N>",
        "\ud800",
        "//",
        "/*",
        "*/",
        "#if 0\n",
        "\\\n",
        '{"expr": "n", "type": "int64"}',
        "size_t ",
        "1e999",
        "99999999999999999999",
    ]
    rng = random.Random(2506)
    outcomes = {"accepted": 0, "refused": 0}
    for _ in range(400):
        chars = list(good)
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(chars))
            if rng.random() < 0.5:
                del chars[pos : pos + rng.randint(1, 20)]
            else:
                chars.insert(pos, rng.choice(pieces))
        try:
            parsed = parse_reply("".join(chars))
            bind_plan(parsed.plan, task, parse_kernels(parsed.source))
            outcomes["accepted"] += 1
        except FormatError as exc:
            assert str(exc)
            outcomes["refused"] += 1
    # Both outcomes occur: the mutations are neither all harmless nor all fatal.
    assert outcomes["accepted"] > 0 and outcomes["refused"] > 0
