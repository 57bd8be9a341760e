"""The CUDA headers' macros that paste or emit pragmas (engine/compile/header_macros.py), and the policy's
use of them: headers of our own make each case, then the real headers (NVRTC's, and the toolkit's where
there is one) refuse the audit's attacks and accept what kernels write."""

from __future__ import annotations

import glob
import os
import re
import time
from pathlib import Path

import pytest

from cuda_llm.engine.compile import header_macros as hm
from cuda_llm.engine.compile import headers as header_search
from cuda_llm.engine.compile.includes import PolicyViolation, check_source_policy
from cuda_llm.engine.contract.reply import parse_reply
from tests.compile.attacks import ATTACKS, HARMLESS, HEADERS_IN_USE, K, attack
from tests.compile.conftest import needs_nvrtc

REPO = Path(__file__).resolve().parents[2]

# A header written like the CUDA ones: pasting helpers, pragma helpers, an MSVC branch that pastes,
# a libcu++-style namespace that pastes a version, and documentation examples in comments.
FAKE_HEADER = r"""
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define ALIAS CAT
#define STR(x) #x
#define PRAGMA(x) _Pragma(#x)
#define APPLY(f) f
#define LATE APPLY(CAT)
#define FORMS_PRAGMA CAT(_Pra, gma)
#define OPEN_PRAGMA _Pragma(
#define OPEN_CALL CAT(x,
#define PUSH _Pragma("nv_diagnostic push")
#define HAS_FP16 __has_include(<cuda_fp16.h>)
#define HAS __has_include
#define HAS_ANY(h) __has_include(h)
#define VERSION 4
#define NS CAT(__, VERSION)
#define VSTD ::cuda::std::NS
#define INF VSTD::numeric_limits<float>::infinity()
#define QUIET(...) foo(__VA_ARGS__)
#define PASTE_ALL(...) CAT(__VA_ARGS__)
#define MIXED 1
#define MIXED(x) x ## 1
#if defined(_MSC_VER)
#define __location__(a) __annotate__(__##a##__)
#else
#define __location__(a) __annotate__(a)
#endif
#define __annotate__(a) __attribute__((a))
#define __device__ __location__(device)
#define SPLIT(a, b) a \
    ## b
// #define EXAMPLE(x) x##_suffix
/* #define IN_BLOCK_COMMENT(x) x##y */
#define SAFE(x) ((x) + 1)
#define SAFE_OBJ (VERSION * 2)
#define LOG(fmt, args...) printf(fmt, ## args)
#define LOG_HELLO LOG("hello")
"""


@pytest.fixture(scope="module")
def fake(tmp_path_factory) -> hm.HeaderMacros:
    folder = tmp_path_factory.mktemp("headers")
    (folder / "fake.h").write_text(FAKE_HEADER)
    (folder / "sub").mkdir()
    (folder / "sub" / "more.h").write_text("#define MORE(x) PRAGMA(x)\n")
    return hm.for_folders([str(folder)])


@pytest.mark.parametrize(
    "name",
    [
        "CAT_",  # pastes its arguments
        "CAT",  # through CAT_
        "ALIAS",  # expands to CAT's bare name: `ALIAS(_Pra, gma)` is CAT(_Pra, gma)
        "LATE",  # the same, through an argument
        "PRAGMA",  # _Pragma(#x)
        "MORE",  # in another file, through PRAGMA
        "FORMS_PRAGMA",  # fixed tokens, but what it forms is _Pragma, for the next tokens to feed
        "OPEN_PRAGMA",  # the candidate would close the parentheses
        "OPEN_CALL",
        "HAS",
        "HAS_ANY",
        "PASTE_ALL",
        "MIXED",  # one of its definitions pastes
        "__location__",  # the MSVC branch pastes: every branch counts
        "SPLIT",  # a paste behind a line splice
        "IN_BLOCK_COMMENT",  # counted: a definition too many only refuses more
        "LOG",  # pastes (a comma to its variable arguments, but a paste all the same)
    ],
)
def test_macros_the_candidate_could_steer_are_refused(fake: hm.HeaderMacros, name: str) -> None:
    assert name in fake.refused, fake.reasons


@pytest.mark.parametrize(
    "name",
    [
        "STR",  # stringizing alone forms a string, nothing more
        "PUSH",  # a fixed pragma of the headers' own
        "HAS_FP16",  # a fixed probe of a header's name
        "NS",  # pastes, but only its own fixed tokens
        "VSTD",
        "INF",
        "__device__",  # pastes `__device__` back together in the MSVC branch: fixed tokens too
        "__annotate__",
        "QUIET",
        "SAFE",
        "SAFE_OBJ",
        "EXAMPLE",  # a documentation example in a // comment
        "LOG_HELLO",  # GNU's `, ## args` drops the comma: printf("hello")
    ],
)
def test_macros_with_nothing_to_steer_are_usable(fake: hm.HeaderMacros, name: str) -> None:
    assert name not in fake.refused, fake.reasons.get(name)


def test_what_a_fixed_paste_reads_may_not_be_redefined(fake: hm.HeaderMacros) -> None:
    """`#define VERSION _Pra` would steer NS's paste; `device` reaches __location__'s."""
    assert {"VERSION", "device", "__4"} <= fake.fixed
    assert not {"INF", "SAFE_OBJ", "numeric_limits", "infinity"} & fake.fixed


def test_the_policy_refuses_a_refused_macro_wherever_it_is_spelled(fake: hm.HeaderMacros) -> None:
    for source in (
        'CAT(_Pra, gma)("message(\\"x\\")")\n',
        "#define C CAT\nC(__has_, include)(</etc/passwd>)\n",  # the #define's body spells it
        "#if defined(PRAGMA)\n#endif\n",
        "int x = APPLY(ALIAS)(a, b);\n",
    ):
        with pytest.raises(PolicyViolation, match="is a macro of the CUDA headers that pastes tokens or emits"):
            check_source_policy(source + K, fake)
    # In comments and literals it is no name at all.
    assert check_source_policy('// CAT(a, b)\nconst char* s = "PRAGMA(x)";\n' + K, fake) == ()


def test_the_policy_refuses_redefining_what_a_fixed_paste_reads(fake: hm.HeaderMacros) -> None:
    for source in ("#define VERSION _Pra\n", "#undef device\n", "  #  define device 1\n"):
        with pytest.raises(PolicyViolation) as info:
            check_source_policy(source + K, fake)
        assert "choose another name" in str(info.value) and info.value.violations[0][0] == 1
    assert check_source_policy("#ifdef VERSION\n#endif\nint VERSION_2;\n" + K, fake) == ()


def test_the_scan_is_made_once_per_set_of_folders(tmp_path: Path) -> None:
    (tmp_path / "a.h").write_text("#define P(x) _Pragma(#x)\n")
    first = hm.for_folders([str(tmp_path)])
    assert hm.for_folders([str(tmp_path)]) is first  # the same object: nothing recomputed
    (tmp_path / "b.h").write_text("#define Q(a, b) a##b\n")  # a new file changes the folder
    os.utime(tmp_path, ns=(time.time_ns(), time.time_ns() + 10**9))
    again = hm.for_folders([str(tmp_path)])
    assert {"P", "Q"} <= again.refused and "Q" not in first.refused
    assert hm.for_folders([str(tmp_path / "missing")]) is hm.NO_HEADERS


# -- the real headers --------------------------------------------------------------------------------


def _legit_sources() -> dict[str, str]:
    baselines = glob.glob(str(REPO / "tasks/*/baseline.cu"))
    sources = {f"tasks/{Path(p).parent.name}": Path(p).read_text() for p in baselines}
    for path in sorted(glob.glob(str(REPO / "bench/heldout/*.md"))):
        if not path.endswith("README.md"):
            sources[f"bench/heldout/{Path(path).name}"] = parse_reply(Path(path).read_text()).source
    sources["HEADERS_IN_USE"] = HEADERS_IN_USE + K
    return sources


LEGIT = _legit_sources()
HEADER_ATTACKS = sorted(name for name in ATTACKS if name.startswith("header_macro"))


def _toolkit() -> hm.HeaderMacros | None:
    found = header_search.find_toolkit_headers()
    return hm.for_folders([str(d) for d in found.dirs]) if found else None


@needs_nvrtc
def test_the_compiler_headers_refuse_the_audited_macros() -> None:
    macros = hm.current()
    assert macros.files > 100, macros
    assert {"_CCCL_PP_CAT", "_CCCL_PRAGMA", "NV_IF_TARGET"} <= macros.refused
    usable = {"__device__", "__global__", "__shared__", "__forceinline__", "INFINITY", "CUDART_INF_F", "_CUDA_VSTD"}
    assert not usable & macros.refused
    assert hm.current() is macros


@needs_nvrtc
@pytest.mark.parametrize("name", HEADER_ATTACKS)
def test_header_macro_attacks_are_refused(name: str) -> None:
    with pytest.raises(PolicyViolation, match="is a macro of the CUDA headers"):
        check_source_policy(attack(name))


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(LEGIT))
def test_kernels_as_written_pass(name: str) -> None:
    headers = check_source_policy(LEGIT[name])
    # The allowed headers it includes come back, each once, in the order written.
    written = re.findall(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]", LEGIT[name], re.M)
    assert list(headers) == list(dict.fromkeys(written))


@pytest.mark.skipif(header_search.find_toolkit_headers() is None, reason="no CUDA toolkit include folder")
def test_the_toolkit_headers_too() -> None:
    """CUDA 13.0's headers (the GPU image's NVRTC has no bundle) paste in host_defines.h's MSVC
    branch (__device__, __global__, ...) and in libcu++'s ABI namespace (_CUDA_VSTD, so INFINITY):
    fixed tokens, usable. The attacks are refused there as well."""
    macros = _toolkit()
    assert macros is not None
    for source in LEGIT.values():
        check_source_policy(source, macros)
    for name in [*HEADER_ATTACKS, *sorted(ATTACKS)]:
        with pytest.raises(PolicyViolation):
            check_source_policy(attack(name), macros)
    for source in HARMLESS.values():
        check_source_policy(source.replace("FILE", "/etc/passwd").replace("\r\n", "\n"), macros)


@needs_nvrtc
def test_the_check_stays_cheap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan is made once; each check then costs a set lookup per identifier. Measured as a
    ratio of this thread's CPU time, not a wall-clock time: a busy machine stretches a wall-clock
    time by preemption, the long check more often than the short one (a ratio of wall-clock times
    went over the bound on the 2-core machine under load). A source 64 times longer costs at most
    a few times 64 as much, where a check that grew with the square would cost 4,096 times."""
    hm.current()
    scans: list[object] = []
    monkeypatch.setattr(hm, "scan", lambda folders: scans.append(folders) or pytest.fail("scanned again"))
    unit = HEADERS_IN_USE + K

    def cost(source: str) -> float:
        times = []
        for _ in range(3):
            started = time.thread_time()
            check_source_policy(source)
            times.append(time.thread_time() - started)
        return min(times)

    small, large = cost(unit * 4), cost(unit * 256)  # 256 copies: about the 256 KiB source limit
    assert not scans
    assert large / small < 64 * 4, f"64 times the source cost {large / small:.0f} times as much"
