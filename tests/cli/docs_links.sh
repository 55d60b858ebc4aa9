# README.md and docs/*.md stand alone: no reference to the team's shared folder (a user's clone
# has none), and every relative link points to a file (and heading) that exists. The comments of
# src/, tests/, tools/ and bench/ are held to the same rule (a planted one is found).
# Helper: tests/cli/docs_check.py.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
checks=1
/usr/bin/python3 "$repo/tests/cli/docs_check.py" links "$repo" >check.txt 2>&1 ||
  fail "README.md or docs/ point outside the repository or to nothing:$(printf '\n'; grep '^FAIL' check.txt)"
grep '^note' check.txt >&2

expect_exit 0 "comments of src/, tests/, tools/, bench/" -- /usr/bin/python3 "$repo/tests/cli/docs_check.py" comments "$repo"
grep '^FAIL' out.txt >&2

rm -rf copy && mkdir -p copy/src/io copy/tools
printf '#pragma once\n// The layout of DESIGN.md, as seed 001 has it.\nint x;  // ../shared/data\n' >copy/src/io/planted.h
printf '#!/bin/sh\necho "seed 003 is a string, not a comment"\n' >copy/tools/planted.sh
expect_exit 1 "planted comments" -- /usr/bin/python3 "$repo/tests/cli/docs_check.py" comments copy
expect_contains out.txt "src/io/planted.h:2: a comment names 'DESIGN.md'" "src/io/planted.h:2: a comment names 'seed 001'" \
  "src/io/planted.h:3: a comment names '../shared'"
grep -q "planted.sh" out.txt && fail "a string outside a comment was taken for one: $(grep planted.sh out.txt)"
rm -rf copy
finish
