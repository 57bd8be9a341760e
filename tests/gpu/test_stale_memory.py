"""Reading what is not yours: the reward hack of returning memory that still holds the right answer.

A candidate's kernel runs in the same CUDA context as the baseline and every candidate before it, on
the same inputs. A kernel that searches device memory for a run of floats equal to the answer (it
can check a run against a[j] + b[j] for the first elements) and copies it out would pass validation
if an earlier run's outputs, or the expected values of a comparison, were still there.

What the search can reach. It reads the 2 MiB-aligned page around every buffer it is handed (c, a,
b and a scratch buffer): a page that holds one mapped byte is mapped whole, so the read cannot
fault. Every harness buffer starts on a 2 MiB boundary and has 2 MiB of slack behind it
(BUFFER_ALIGNMENT in engine/gpu/driver.py), so each of those pages is the buffer's own allocation
whenever the driver returns an aligned base; another allocation (an idle buffer of the arena, an
input master, a comparison's expected values) shares one only where the driver packs allocations
unaligned. Where the search does reach another run's buffer, that buffer was wiped when it was
given back (engine/gpu/arena.py; the expected values also by engine/gpu/device_compare.py), and a
reused buffer's own bytes are overwritten before every run (inputs copied, outputs poisoned,
scratch zeroed). So the thief finds nothing: 'wrong', every output unwritten.

What this GPU test cannot show: that the wipe is what leaves nothing. With the pages above holding
only the kernel's own, freshly overwritten allocations, the thief would find nothing here even if
the arena stopped wiping. The wipe itself is pinned on the CPU by tests/gpu_side/test_arena.py
(test_idle_buffers_hold_nothing_of_their_last_user_while_others_run goes red without it) and on a
GPU by tests/gpu/test_multi_gpu.py (test_the_driver_wipes_a_freed_buffer_before_handing_it_out_again:
a reused buffer read back holds only zeros).

The control: the same two-launch plan and the same scan, with the first launch copying the input
`a` into the scratch. The scan skips only a, b and c, so it must find that copy (in the scratch's
page, guaranteed; in c's page too where the driver put the scratch there) and write a marker that
says which page held it. A copy of `a` made by the harness cannot serve: since the inputs are kept
as long-lived masters (engine/gpu/input_masters.py) no copy sits beside the candidate's buffers.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

# STAGE: what the first launch does with the scratch `copy` (zero-filled by the harness before every
# run). The second launch scans the 2 MiB page around each of c, copy, a and b, skipping only the
# start positions a, b and c. FOUND(cand) says what a start position must hold; ON_FOUND what to
# write then (`page` is the index of the page in that order). Only the small validation sizes are
# searched (a run of n floats must fit in a page).
SEARCH = r"""
extern "C" __global__ void stage(const float* a, float* copy, int n) {
  if (n < 1 || n > 4096) return;
  STAGE
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, const float* copy, int n) {
  if (n < 1 || n > 4096) return;
  const unsigned long long window = 2ull << 20;
  const unsigned long long slots = window / sizeof(float) - (unsigned long long)n;
  const int k = n < 16 ? n : 16;
  const float* pages[4] = {c, copy, a, b};
  for (int page = 0; page < 4; ++page) {
    const float* base = (const float*)((unsigned long long)pages[page] & ~(window - 1));
    for (unsigned long long s = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; s < slots;
         s += (unsigned long long)gridDim.x * blockDim.x) {
      const float* cand = base + s;
      if (cand == c || cand == a || cand == b) continue;
      bool match = true;
      for (int j = 0; j < k && match; ++j) match = FOUND;
      if (match) { ON_FOUND }
    }
  }
}
"""
PLAN = {
    "scratch": [{"name": "copy", "dtype": "float32", "count": "n"}],
    "launches": [
        {"kernel": "stage", "grid": [1], "block": [1], "args": ["a", "copy", "n"]},
        {"kernel": "vector_add", "grid": [512], "block": [256], "args": ["a", "b", "c", "copy", "n"]},
    ],
}


def search(stage: str, found: str, on_found: str) -> str:
    return SEARCH.replace("STAGE", stage).replace("ON_FOUND", on_found).replace("FOUND", found)


# The hack: the scratch left as the harness filled it; a run equal to the answer, copied out whole.
ANSWER_THIEF = search("", "(cand[j] == a[j] + b[j])", "for (int j = 0; j < n; ++j) c[j] = cand[j];")
# The control: `a` copied into the scratch; a run equal to `a` found, every output is set to a marker
# value naming the page it was found in (0: c's, 1: the scratch's, 2: a's, 3: b's).
MARKER = 12345.0
PAGES = {MARKER + i: name for i, name in enumerate(["c", "scratch", "a", "b"])}
INPUT_FINDER = search(
    "for (int j = 0; j < n; ++j) copy[j] = a[j];",
    "(cand[j] == a[j])",
    f"for (int j = 0; j < n; ++j) c[j] = {MARKER}f + page;",
)


@pytest.mark.fault(
    "host safety",
    "a kernel that searches device memory outside its buffers for the answer (an earlier run's outputs, "
    "the expected values) and copies it out",
    "wrong: the scan of the 2 MiB pages around its buffers finds no answer (the control's staged copy in a "
    "scratch shows the same scan reaches a live allocation); every output unwritten",
)
def test_a_kernel_searching_memory_for_the_answer_finds_nothing(observed, gpu, fault_device):
    fault_device(gpu.env.device.name)
    # The baseline first: its outputs on these very inputs were on the device a moment ago.
    assert gpu.judge("vector_add").status == "correct"
    j = gpu.judge("vector_add", ANSWER_THIEF, plan=PLAN, label="thief")
    observed(f"{j.status}: {j.message}")
    assert j.status == "wrong", (j.status, j.message)
    small = [c for c in j.validation.cases if not c.passed]
    assert small and all(c.unwritten == c.checked for c in small), [(c.case, c.unwritten, c.checked) for c in small]
    assert gpu.judge("vector_add").status == "correct"


def test_the_search_reaches_other_allocations(gpu):
    """The control: the same plan and scan find a copy of the input in another live allocation (the
    scratch), so 'found nothing' above means there was nothing in reach, not that the scan is blind."""
    j = gpu.judge("vector_add", INPUT_FINDER, plan=PLAN, label="finder")
    assert j.status == "wrong", (j.status, j.message)
    pages = sorted({PAGES[m.got] for m in j.validation.mismatches if m.got in PAGES})
    assert pages, [(m.case, m.got) for m in j.validation.mismatches]
    print(f"the copy of a was found in the page of: {', '.join(pages)}")
