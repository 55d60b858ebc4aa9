#!/usr/bin/env bash
# Fails when the repository's root holds a file that looks like a run's output (a test's out.txt,
# a log, a results document) and would be committed: the root holds the build and the README,
# outputs belong in build/ or a scratch folder. Usable as a pre-commit hook.
#
#   check_root_files.sh [REPO]
#
# In a git work tree the files looked at are the ones git would commit (tracked, or untracked and
# not ignored); elsewhere (an exported tree) every file at the root. Prints one line per artefact
# and exits 1 when there is any, 0 otherwise.
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}

# Names a run leaves behind; CMakeLists.txt is the one .txt that belongs at the root.
looks_like_output() {
  case "$1" in
    CMakeLists.txt) return 1 ;;
    *.txt | *.log | *.json | *.out | *.err | *.csv | *.npy | *.npz | *.safetensors | core | core.*) return 0 ;;
    *) return 1 ;;
  esac
}

if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
  [ "$(git -C "$repo" rev-parse --show-toplevel)" = "$(cd "$repo" && pwd -P)" ]; then
  files=$(git -C "$repo" ls-files --cached --others --exclude-standard | grep -v / || true)
else
  files=$(find "$repo" -mindepth 1 -maxdepth 1 -type f -printf '%f\n')
fi

found=0
while IFS= read -r name; do
  [ -n "$name" ] || continue
  if looks_like_output "$name"; then
    echo "FAIL: $name at the repository root looks like a run's output: delete it or move it out of the root"
    found=1
  fi
done <<<"$files"
exit "$found"
