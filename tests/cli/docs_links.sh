# README.md and docs/*.md stand alone: no reference to the team's shared folder (a user's clone
# has none), and every relative link points to a file (and heading) that exists.
# Helper: tests/cli/docs_check.py.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
checks=1
/usr/bin/python3 "$repo/tests/cli/docs_check.py" links "$repo" >check.txt 2>&1 ||
  fail "README.md or docs/ point outside the repository or to nothing:$(printf '\n'; grep '^FAIL' check.txt)"
grep '^note' check.txt >&2
finish
