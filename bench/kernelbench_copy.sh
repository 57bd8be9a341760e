#!/usr/bin/env bash
# Copy what bench/kernelbench_side_by_side.py needs of a KernelBench checkout (MIT; its LICENSE
# travels with it) into .kernelbench/ at the repository root, and keep that folder out of git.
#   bash bench/kernelbench_copy.sh /path/to/KernelBench [DEST]
set -euo pipefail
src=${1:?usage: bash bench/kernelbench_copy.sh /path/to/KernelBench [DEST]}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${2:-$root/.kernelbench}
for need in src/kernelbench/eval.py src/kernelbench/timing.py KernelBench/level1 LICENSE; do
  [ -e "$src/$need" ] || { echo "error: $src has no $need: give a KernelBench checkout" >&2; exit 2; }
done
rm -rf "$dest"
mkdir -p "$dest/src" "$dest/KernelBench"
# The package as it is (under 1 MB) and level 1's problems.
cp -r "$src/src/kernelbench" "$dest/src/"
find "$dest/src" -name __pycache__ -type d -prune -exec rm -rf {} +
cp -r "$src/KernelBench/level1" "$dest/KernelBench/"
cp "$src/LICENSE" "$dest/"
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "$commit" > "$dest/COMMIT"
# Ignored through git's own exclude file, not .gitignore: the copy is local to this checkout.
exclude=$(git -C "$root" rev-parse --git-path info/exclude 2>/dev/null || true)
if [ -n "$exclude" ]; then
  case $exclude in /*) ;; *) exclude=$root/$exclude ;; esac
  mkdir -p "$(dirname "$exclude")"
  grep -qxF "/.kernelbench/" "$exclude" 2>/dev/null || echo "/.kernelbench/" >> "$exclude"
fi
echo "copied KernelBench $commit (src/kernelbench, KernelBench/level1, LICENSE) to $dest ($(du -sh "$dest" | cut -f1))"
