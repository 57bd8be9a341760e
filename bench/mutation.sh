#!/usr/bin/env bash
# Mutation testing of the judge's checks with mutmut (docs/testing.md): every mutant of the files
# in scope is run against the tests that cover it, and what survives is listed.
#
#   bash bench/mutation.sh [FILE...]      # default: the whole scope below; FILE as in the repository
#
# mutmut names a mutant by its file's path, and the tests import cuda_llm.engine...: so it runs in
# a copy of the checkout laid out as the package installs (engine/ -> cuda_llm/engine/ ...), where
# the two agree. The checkout itself is never touched. Results: `mutmut results` in the copy,
# whose path is printed first. Slow: minutes per file on two cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scope=(
  engine/judge/judge.py engine/judge/metrics.py engine/judge/judgement.py
  engine/gpu/validate.py engine/gpu/harness.py engine/gpu/device_compare.py engine/gpu/compare.py
  engine/compile/includes.py engine/compile/header_macros.py engine/llm/bounded.py engine/gpu/stop_rule.py
)
files=("${@:-${scope[@]}}")
# The tests that pin these files (each mutant runs only those of them that reach its function).
tests=(
  tests/judge tests/gpu_side tests/contract/test_limits.py tests/compile/test_includes.py
  tests/compile/test_includes_pinned.py tests/compile/test_header_macros.py tests/compile/test_header_macros_pinned.py
  tests/llm/test_encoded_replies.py
  tests/llm/test_response_cap.py
  tests/llm/test_bounded.py
)

work=$(mktemp -d /tmp/cuda-llm-mutation-XXXX)
echo "mutation: working in $work"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work" 2>/dev/null) || true
cd "$work"
for top in engine app tasks themes; do mv "$top" "cuda_llm/$top"; done
only=$(printf '"cuda_llm/%s", ' "${files[@]}")
selection=$(printf '"%s", ' "${tests[@]}")
cat >> pyproject.toml <<TOML

[tool.mutmut]
source_paths = ["cuda_llm"]
only_mutate = [${only%, }]
# One worker and no xdist inside mutmut's own runs: the machine's other cores stay usable.
pytest_add_cli_args = ["-n", "0", "-p", "no:cacheprovider", "-q"]
pytest_add_cli_args_test_selection = [${selection%, }]
TOML
mutmut run --max-children "${MUTATION_CHILDREN:-1}" || true
mutmut results
