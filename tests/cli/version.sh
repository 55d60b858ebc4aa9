# tqlab --version names the commit the binary was built from (results record
# it as tqlab.git_commit): after a commit and an incremental build too.
source "$(dirname "$0")/lib.sh" "$@"
source_dir=$(cd "$(dirname "$0")/../.." && pwd)

expect_exit 0 "--version" -- "$TQLAB" --version
expect_contains out.txt "tqlab " "kernels:"
if commit=$(git -C "$source_dir" rev-parse --short=12 HEAD 2>/dev/null); then
  expect_contains out.txt "($commit)"
else
  echo "not a git checkout: the commit is not checked"
fi
finish
