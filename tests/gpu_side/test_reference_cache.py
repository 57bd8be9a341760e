"""The worker's reference cache (no GPU needed): computed once per task, size and seed; expected
outputs stored as the comparisons read them; nothing a candidate could alter."""

import numpy as np

from cuda_llm.engine.gpu.compare import output_rms
from cuda_llm.engine.gpu.reference_cache import ReferenceCache
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.reference import case_seed


def test_expected_outputs_are_float64_contiguous_read_only_and_reused():
    task = TaskLibrary().get("reverse_array")  # its reference returns float32
    case = task.validation[3]
    cache = ReferenceCache()
    first = cache.get(task, case, case_seed(task, case, 0))
    again = cache.get(task, case, case_seed(task, case, 0))
    assert again is first
    (out,) = first.expected.values()
    assert out.dtype == np.float64 and out.flags.c_contiguous and not out.flags.writeable
    (x,) = first.inputs.values()
    assert not x.flags.writeable
    np.testing.assert_array_equal(out, x[::-1].astype(np.float64))


def test_inputs_only_entries_carry_no_expected_output():
    task = TaskLibrary().get("vector_add")
    case = task.validation[0]
    entry = ReferenceCache().get(task, case, case_seed(task, case, 0, "profile"), with_expected=False)
    assert entry.expected is None and set(entry.inputs) == {"a", "b"}


def test_the_rms_rule_gets_each_outputs_rms_once_with_the_case():
    task = TaskLibrary().get("layernorm")  # the one task under the "rms" rule
    case = task.validation[0]
    entry = ReferenceCache().get(task, case, case_seed(task, case, 0))
    ((name, out),) = entry.expected.items()
    assert entry.rms_of(name) == output_rms(out.reshape(-1)) > 0
    other = TaskLibrary().get("vector_add")
    plain = ReferenceCache().get(other, other.validation[0], case_seed(other, other.validation[0], 0))
    assert plain.rms == {} and plain.rms_of("c") == 0.0
