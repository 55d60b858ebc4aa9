# docs/REFERENCE.md against the binary: every subcommand and flag its --help texts list, every
# schema they name, and every method and option of `tqlab list --json` must be documented there,
# so that the reference and the binary cannot drift apart. Helper: tests/cli/docs_check.py.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
checks=1
/usr/bin/python3 "$repo/tests/cli/docs_check.py" reference "$TQLAB" "$repo" >check.txt 2>&1 ||
  fail "docs/REFERENCE.md misses what the binary has:$(printf '\n'; grep '^FAIL' check.txt)"
finish
