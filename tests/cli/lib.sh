# Helpers for CLI tests: sourced by tests/cli/*.sh, which run as
#   bash NAME.sh TQLAB_BINARY SHARED_DATA_DIR
# in a scratch directory of their own. A test exits 77 to be reported as skipped.
set -u
# Each run starts from an empty scratch folder (ctest's cli_scratch/NAME): what an earlier run left
# (a journal of a killed sweep, say) must not change this one. Elsewhere nothing is removed.
case "$PWD" in */cli_scratch/*) find . -mindepth 1 -delete ;; esac
TQLAB=$1
SHARED_DATA=$2
failures=0
checks=0

# require_numpy WHY: Debian's own python3 (another python3 first on PATH may lack numpy) is $python;
# without numpy the test is skipped (exit 77), saying WHY numpy is needed.
python=/usr/bin/python3
require_numpy() {
  if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "SKIP: $python with numpy is needed (Debian: python3-numpy): $1"
    exit 77
  fi
}

# require_references PACKAGE_DIR...: a reference test's own dependencies, each a folder under tools/
# (e.g. llamacpp_reference/node_modules/node-llama-cpp), plus Debian's nodejs (as $node) and
# $python with numpy. tools/install_deps.sh installs them all; a missing one FAILS the test (exit 1,
# never a skip), so that CI cannot pass without the reference.
require_references() {
  node=$(command -v node || true)
  if [ -z "$node" ]; then
    echo "FAIL: nodejs is not installed (tools/install_deps.sh installs it)"
    exit 1
  fi
  local package
  for package in "$@"; do
    if [ ! -d "$(dirname "${BASH_SOURCE[0]}")/../../tools/$package" ]; then
      echo "FAIL: tools/$package is missing (run tools/install_deps.sh)"
      exit 1
    fi
  done
  if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "FAIL: $python with numpy is needed (Debian: python3-numpy)"
    exit 1
  fi
}

# require_real_dump: sets $dump to the shared data folder's real KV dump (tinyllama_qkv.safetensors:
# head dim 64, 4 layers), or SKIPs the test (exit 77) where that folder does not hold it.
require_real_dump() {
  dump="$SHARED_DATA/tinyllama_qkv.safetensors"
  if [ ! -f "$dump" ]; then
    echo "SKIP: $dump is absent (the real KV dump of ../shared/data)"
    exit 77
  fi
}

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_exit CODE DESCRIPTION -- COMMAND...: runs COMMAND, captures stdout/stderr to out.txt/err.txt.
expect_exit() {
  local want=$1 description=$2
  shift 3
  checks=$((checks + 1))
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$description: exit $got, expected $want"
    sed 's/^/    stderr: /' err.txt | head -5 >&2
  fi
}

# expect_error_line NEEDLE...: stderr is exactly one line and holds every NEEDLE.
expect_error_line() {
  local lines
  lines=$(grep -c . err.txt)
  if [ "$lines" != 1 ]; then
    fail "expected one error line, got $lines: $(head -3 err.txt)"
  fi
  local needle
  for needle in "$@"; do
    grep -qF -- "$needle" err.txt || fail "error line lacks '$needle': $(cat err.txt)"
  done
}

# expect_refused DESCRIPTION NEEDLE... -- COMMAND...: COMMAND exits 2 within a minute with one stderr line
# holding every NEEDLE, prints nothing on stdout, and leaves no bad.json behind (the output a test gives
# the commands it expects refused).
expect_refused() {
  local description=$1
  shift
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  rm -f bad.json
  expect_exit 2 "$description" -- timeout 60 "$@"
  expect_error_line "${needles[@]}"
  [ -s out.txt ] && fail "$description: printed to stdout: $(head -2 out.txt)"
  [ -e bad.json ] && fail "$description: left bad.json behind"
}

# expect_contains FILE NEEDLE...
expect_contains() {
  local file=$1
  shift
  local needle
  for needle in "$@"; do
    grep -qF -- "$needle" "$file" || fail "$file lacks '$needle'"
  done
}

# same_outside_timing A B: two results documents are byte for byte the same up to their "timing"
# section (the last one; its seconds differ on every run).
same_outside_timing() {
  "$python" - "$1" "$2" <<'PY'
import json, sys
def head(path):
    text = open(path, "rb").read()
    assert "timing" in json.loads(text), path + " has no timing section"
    return text[:text.rindex(b'"timing"')]
sys.exit(0 if head(sys.argv[1]) == head(sys.argv[2]) else 1)
PY
}

finish() {
  echo "$checks commands checked, $failures failures"
  [ "$failures" = 0 ]
  exit $?
}
