# The rooms of src/ stay rooms: tools/check_includes.py holds every #include to the table of
# docs/ARCHITECTURE.md. It passes on the tree, and fails on a copy of it given an upward include
# (io/ including the sweep) and a room the table does not name.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
check="$repo/tools/check_includes.py"

expect_exit 0 "include order of the tree" -- /usr/bin/python3 "$check" "$repo"
grep '^FAIL' out.txt >&2

rm -rf copy && mkdir -p copy && cp -r "$repo/src" "$repo/docs" copy/
printf '#include "sweep/sweep.h"\n' >>copy/src/io/npy.h
expect_exit 1 "an upward include io/ -> sweep/" -- /usr/bin/python3 "$check" copy
expect_contains out.txt "src/io/npy.h" "includes sweep/, which the room io/ may not include"

rm -rf copy && mkdir -p copy && cp -r "$repo/src" "$repo/docs" copy/
mkdir copy/src/attic && printf '#include "core/error.h"\n' >copy/src/attic/old.h
expect_exit 1 "a room the table does not name" -- /usr/bin/python3 "$check" copy
expect_contains out.txt "src/attic/ is not a room"
rm -rf copy
finish
