# The repository's root holds no run's output (tools/check_root_files.sh): it passes on the tree,
# finds an out.txt and a run.log planted in an exported copy, lets git's ignore rules keep an
# untracked out.txt out of a work tree, and finds one added by force.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
check="$repo/tools/check_root_files.sh"

expect_exit 0 "no run's output at the root of the tree" -- bash "$check" "$repo"
grep '^FAIL' out.txt >&2

rm -rf copy && mkdir copy && cp "$repo/CMakeLists.txt" "$repo/README.md" copy/
expect_exit 0 "an exported copy with only the build and the README" -- bash "$check" copy
echo planted >copy/out.txt && echo planted >copy/run.log
expect_exit 1 "an exported copy with an out.txt and a run.log" -- bash "$check" copy
expect_contains out.txt "FAIL: out.txt at the repository root" "FAIL: run.log at the repository root"

rm -rf copy && mkdir copy && cp "$repo/CMakeLists.txt" "$repo/.gitignore" copy/
git -C copy init -q && echo planted >copy/out.txt
expect_exit 0 "an untracked, ignored out.txt in a work tree" -- bash "$check" copy
git -C copy add -f out.txt
expect_exit 1 "an out.txt added by force" -- bash "$check" copy
expect_contains out.txt "FAIL: out.txt at the repository root"
rm -rf copy
finish
