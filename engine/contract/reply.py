"""Split a model's reply into its explanation, its CUDA source and its launch plan.

A reply holds exactly one fenced code block with the kernels and one fenced ```json launch plan
(docs/architecture.md, "The reply contract"). Models wrap those in prose, label fences loosely and
get cut off mid-reply; this module is tolerant of the prose and strict about the blocks, and every FormatError says what
was found, where, and what to send instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cuda_llm.engine.core.errors import FormatError
from cuda_llm.engine.task.plan import LaunchPlan, parse_plan

# A kernel source and its plan are a few KiB, and the compiler accepts 256 KiB of source; a
# reply over a megabyte is a runaway generation (text repeated until the token limit), and
# scanning, storing and quoting it back would cost more than it could be worth.
MAX_REPLY_BYTES = 1024 * 1024

# Fence info strings that mark the kernel source. Models use any of these for CUDA.
CODE_LANGUAGES = frozenset({"cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp"})
# Fence info strings that mark the launch plan (jsonc/json5 still have to be plain JSON; taking
# them as the plan lets the JSON error say what is wrong instead of "no plan").
PLAN_LANGUAGES = frozenset({"json", "jsonc", "json5"})
# Blocks listed by line in a message: enough to find them, short enough for a prompt.
MAX_LINES_LISTED = 6
# A JSON error shows the offending line; longer lines are cut around the error.
MAX_QUOTED_CHARS = 120

_FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
_LANG_RE = re.compile(r"[{.]*([A-Za-z0-9_+#-]*)")
# Content that is unmistakably CUDA device code, for fences without a language.
_CUDA_HINT_RE = re.compile(r"__global__|__device__|extern\s+\"C\"|#\s*include\s*<cuda")
# Reasoning models (DeepSeek-R1, Qwen3 through some servers) put their chain of thought, code
# drafts included, in a leading <think> section; only what follows it is the answer.
_THINK_RE = re.compile(r"\A\s*<think>(?P<body>.*?)(?P<close></think>|\Z)", re.DOTALL)
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_JSON_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')

_FORMAT_HINT = (
    "A reply holds one fenced ```cuda block with all the kernels and one fenced ```json block "
    'with the launch plan {"launches": [...]}; a short explanation may come before them.'
)


@dataclass(frozen=True)
class ParsedReply:
    explanation: str  # the prose outside the code and plan blocks, stripped
    source: str  # the code block's content, ending with a newline
    plan: LaunchPlan
    plan_json: str  # the plan block's text as the model wrote it (stripped)


@dataclass(frozen=True)
class _Block:
    lang: str  # the info string's first word, lower case ("" when there is none)
    body: str
    line: int  # 1-based line of the opening fence in the reply
    start: int  # index of the opening fence line
    end: int  # index of the line after the closing fence


def _lines_listed(blocks: list[_Block]) -> str:
    shown = ", ".join(str(b.line) for b in blocks[:MAX_LINES_LISTED])
    more = len(blocks) - MAX_LINES_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def _fence_name(block: _Block) -> str:
    return f"```{block.lang}" if block.lang else "``` (no language)"


def _split_blocks(lines: list[str]) -> list[_Block]:
    """Fenced blocks in CommonMark's manner: a fence of 3+ backticks or tildes opens a block
    that only a fence of the same character, at least as long, closes. Indented fences (inside
    a list item) are accepted and their indentation removed from the content."""
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE_RE.match(lines[i])
        # A backtick fence's info string holds no backtick: ```x``` on one line is inline code.
        if not m or (m["marker"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        indent, marker = m["indent"], m["marker"]
        lang = _LANG_RE.match(m["info"].strip())[1].lower()  # type: ignore[index]  # the pattern matches any text
        fence = re.compile(rf"^[ \t]*{re.escape(marker[0])}{{{len(marker)},}}(?P<info>.*)$")
        j = None
        for k in range(i + 1, len(lines)):
            f = fence.match(lines[k])
            if f and not f["info"].strip():
                j = k
                break
            if f and f["info"].strip()[0].isalpha():
                # An opening fence with a language cannot be content: the block before it was
                # not closed (usually a closing fence glued to the last line of code).
                raise FormatError(_unclosed_message(lang, marker, i, lines[i + 1 : k], k + 1))
        body_lines = [ln[len(indent) :] if ln.startswith(indent) else ln.lstrip(" \t") for ln in lines[i + 1 : j]]
        body = "\n".join(body_lines)
        if j is None:
            if body.strip():
                raise FormatError(_unclosed_message(lang, marker, i, body_lines, None))
            break  # a stray fence at the very end, with nothing after it: ignore it
        blocks.append(_Block(lang, body, i + 1, i, j + 1))
        i = j + 1
    return blocks


def _unclosed_message(lang: str, marker: str, at: int, body_lines: list[str], next_fence: int | None) -> str:
    name = f"{marker}{lang}" if lang else marker
    line = at + 1
    if next_fence is None:
        message = (
            f"the reply was cut off: the {name} block opened on line {line} is never closed. "
            f"Send the whole reply again, and close each block with {marker} on a line of its "
            "own."
        )
    else:
        message = (
            f"the {name} block opened on line {line} is not closed before the fence on line "
            f"{next_fence}: close each block with {marker} on a line of its own."
        )
    glued = next(
        (k for k, ln in enumerate(body_lines) if ln.rstrip().endswith(marker[:3]) and ln.strip() != marker[:3]),
        None,
    )
    if glued is not None:
        message += (
            f" (Line {line + 1 + glued} ends with {marker[:3]} after other text: a closing "
            "fence must stand alone on its line.)"
        )
    return message


def _looks_like_plan(body: str) -> bool:
    return body.lstrip().startswith("{") and '"launches"' in body


def _is_plan_json(body: str) -> bool:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "launches" in data


def _classify(blocks: list[_Block]) -> tuple[list[_Block], list[_Block], list[_Block]]:
    """(code blocks, plan blocks, other blocks)."""
    code: list[_Block] = []
    plans: list[_Block] = []
    other: list[_Block] = []
    for b in blocks:
        if b.lang in PLAN_LANGUAGES:
            plans.append(b)
        elif b.lang in CODE_LANGUAGES:
            # A plan mislabelled as code is still the plan (and not a second code block).
            (plans if _looks_like_plan(b.body) and _is_plan_json(b.body) else code).append(b)
        elif not b.lang and _looks_like_plan(b.body):
            plans.append(b)
        elif not b.lang and _CUDA_HINT_RE.search(b.body):
            code.append(b)
        else:
            other.append(b)
    return code, plans, other


def _count_problems(code: list[_Block], plans: list[_Block], other: list[_Block]) -> list[str]:
    others = ""
    if other:
        listed = ", ".join(f"a {_fence_name(b)} block on line {b.line}" for b in other[:MAX_LINES_LISTED])
        others = f" (The reply has {listed}: neither kernels nor a launch plan.)"
    problems = []
    if not code:
        problems.append("no CUDA code block found: put all the kernels in one fenced ```cuda block.")
    elif len(code) > 1:
        problems.append(
            f"found {len(code)} CUDA code blocks (opening on lines {_lines_listed(code)}): put "
            "all kernels in one ```cuda block; the harness compiles exactly one source."
        )
    if not plans:
        problems.append(
            'no launch plan found: add one fenced ```json block holding {"launches": '
            '[{"kernel": ..., "grid": [...], "block": [...], "args": [...]}]}.'
        )
    elif len(plans) > 1:
        problems.append(
            f"found {len(plans)} launch plans (```json blocks opening on lines "
            f'{_lines_listed(plans)}): give exactly one, with every launch in its "launches" '
            "list."
        )
    if problems and others:
        problems.append(others.strip())
    return problems


def _check_source(source: str, line: int) -> None:
    """Reject characters that would make the compiled code differ from the code shown and
    checked: NVRTC stops reading at a NUL, and a lone surrogate cannot be encoded at all."""
    if not source.strip():
        raise FormatError(f"the ```cuda block on line {line} is empty: put the kernels in it.")
    nul = source.find("\x00")
    surrogate = _SURROGATE_RE.search(source)
    if nul >= 0:
        pos, what = nul, "a NUL byte (U+0000)"
    elif surrogate:
        pos, what = surrogate.start(), f"a lone surrogate (U+{ord(surrogate.group()):04X})"
    else:
        return
    row = source.count("\n", 0, pos) + 1
    col = pos - (source.rfind("\n", 0, pos) + 1) + 1
    raise FormatError(
        f"the CUDA source contains {what} at line {row}, column {col} of the code block (the "
        f"block opens on line {line} of the reply): remove it and write the source as plain "
        "UTF-8 text."
    )


def _json_hint(body: str, exc: json.JSONDecodeError) -> str:
    line = body.split("\n")[exc.lineno - 1] if body else ""
    before = body[: exc.pos].rstrip()
    at = body[exc.pos : exc.pos + 1]
    if re.search(r"//|/\*", _JSON_STRING_RE.sub('""', line)):
        return " JSON allows no comments: remove them."
    if before.endswith(",") and at in ("}", "]"):
        return f" Remove the trailing comma before '{at}'."
    if at == "'":
        return ' JSON strings use double quotes ("), not single quotes.'
    if exc.msg.startswith("Extra data"):
        return " The block must hold exactly one JSON object."
    return ""


def _quote(body: str, lineno: int, colno: int) -> str:
    line = body.split("\n")[lineno - 1] if body else ""
    start = max(0, colno - 1 - MAX_QUOTED_CHARS // 2)
    shown = line[start : start + MAX_QUOTED_CHARS]
    caret = " " * (colno - 1 - start) + "^"
    return f"\n    {shown}\n    {caret}"


def _load_plan(block: _Block) -> LaunchPlan:
    where = f"launch plan (the {_fence_name(block)} block on line {block.line})"
    try:
        data = json.loads(block.body)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{where}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} of "
            f"the block.{_json_hint(block.body, exc)}{_quote(block.body, exc.lineno, exc.colno)}"
        ) from None
    except RecursionError:
        raise FormatError(f"{where}: the JSON is nested too deeply to be a launch plan") from None
    except ValueError as exc:  # an integer literal thousands of digits long
        raise FormatError(f"{where}: not a usable JSON value ({exc})") from None
    return parse_plan(data)


def parse_reply(text: str, *, max_bytes: int = MAX_REPLY_BYTES) -> ParsedReply:
    """Find the kernels and the launch plan in a model's reply; FormatError says what is wrong."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
        raise FormatError(
            f"the reply is {size} bytes, over the {max_bytes}-byte limit: send only the kernels "
            "and the launch plan, with a short explanation."
        )
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    think = _THINK_RE.match(text)
    if think:
        if not think["close"]:
            raise FormatError(
                "the reply ended inside <think>: the reasoning never finished, so there is no answer. " + _FORMAT_HINT
            )
        # Blank the reasoning but keep its lines, so line numbers match the reply as written.
        text = "\n" * think.group().count("\n") + text[think.end() :]
    if not text.strip():
        raise FormatError("the reply is empty. " + _FORMAT_HINT)

    lines = text.split("\n")
    blocks = _split_blocks(lines)
    code, plans, other = _classify(blocks)
    problems = _count_problems(code, plans, other)
    if problems:
        raise FormatError(" ".join([*problems, _FORMAT_HINT]))

    code_block, plan_block = code[0], plans[0]
    _check_source(code_block.body, code_block.line)
    plan = _load_plan(plan_block)

    taken = set(range(code_block.start, code_block.end)) | set(range(plan_block.start, plan_block.end))
    explanation = "\n".join(ln for k, ln in enumerate(lines) if k not in taken)
    explanation = re.sub(r"\n{3,}", "\n\n", explanation).strip()
    return ParsedReply(
        explanation=explanation,
        source=code_block.body.rstrip("\n") + "\n",
        plan=plan,
        plan_json=plan_block.body.strip(),
    )
