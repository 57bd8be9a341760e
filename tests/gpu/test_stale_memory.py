"""Reading what is not yours: the reward hack of returning memory that still holds the right answer.

A candidate's kernel runs in the same CUDA context as the baseline and every candidate before it, on
the same inputs, and small buffers share the driver's 2 MiB pages, which stay mapped while any
allocation in them lives. A kernel that searches that page for a run of floats equal to the answer
(it can check a run against a[j] + b[j] for the first elements) and copies it out would pass
validation if an earlier run's outputs, or the expected values of a comparison, were still there.
Every device buffer is wiped when it is given back (engine/gpu/arena.py; the expected values by
engine/gpu/device_compare.py), so the search finds nothing and writes nothing: 'wrong', every output
unwritten. The control shows the same search does reach other allocations of the page.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

# Scans the 2 MiB-aligned window that holds `c` (mapped as a whole: the driver's page), skipping its
# own buffers. FOUND(cand) says what a start position must hold; ON_FOUND what to write then. Only
# the small validation sizes are searched (a run of n floats must fit in the window).
SEARCH = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  if (n < 1 || n > 4096) return;
  const unsigned long long window = 2ull << 20;
  const float* base = (const float*)((unsigned long long)c & ~(window - 1));
  const unsigned long long slots = window / sizeof(float) - (unsigned long long)n;
  const int k = n < 16 ? n : 16;
  for (unsigned long long s = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; s < slots;
       s += (unsigned long long)gridDim.x * blockDim.x) {
    const float* cand = base + s;
    if (cand == c || cand == a || cand == b) continue;
    bool match = true;
    for (int j = 0; j < k && match; ++j) match = FOUND;
    if (match) { ON_FOUND }
  }
}
"""
# The hack: a run equal to the answer, copied out whole.
ANSWER_THIEF = SEARCH.replace("ON_FOUND", "for (int j = 0; j < n; ++j) c[j] = cand[j];").replace(
    "FOUND", "(cand[j] == a[j] + b[j])"
)
# The control: a run equal to the input `a` somewhere else in the page (the harness keeps copies of
# the inputs); found, every output is set to a marker value.
MARKER = 12345.0
INPUT_FINDER = SEARCH.replace("ON_FOUND", f"for (int j = 0; j < n; ++j) c[j] = {MARKER}f;").replace(
    "FOUND", "(cand[j] == a[j])"
)


@pytest.mark.fault(
    "host safety",
    "a kernel that searches device memory outside its buffers for the answer (an earlier run's outputs, "
    "the expected values) and copies it out",
    "wrong: nothing to find (every buffer is wiped when given back); every output unwritten",
)
def test_a_kernel_searching_memory_for_the_answer_finds_nothing(observed, gpu):
    # The baseline first: its outputs on these very inputs were on the device a moment ago.
    assert gpu.judge("vector_add").status == "correct"
    j = gpu.judge("vector_add", ANSWER_THIEF, label="thief")
    observed(f"{j.status}: {j.message}")
    assert j.status == "wrong", (j.status, j.message)
    small = [c for c in j.validation.cases if not c.passed]
    assert small and all(c.unwritten == c.checked for c in small), [(c.case, c.unwritten, c.checked) for c in small]
    assert gpu.judge("vector_add").status == "correct"


def test_the_search_reaches_other_allocations_of_the_page(gpu):
    """The control: the same scan finds a copy of its own input elsewhere in the window, so 'found
    nothing' above means there was nothing, not that the scan cannot see."""
    j = gpu.judge("vector_add", INPUT_FINDER, label="finder")
    assert j.status == "wrong", (j.status, j.message)
    assert any(m.got == MARKER for m in j.validation.mismatches), [(m.case, m.got) for m in j.validation.mismatches]
