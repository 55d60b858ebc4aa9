# No line of the C++ sources (src/, tests/, bench/) runs past 120 columns, the limit of
# .clang-format, and no function in src/ runs past 80 lines (tools/check_function_lines.py);
# a planted long line and a planted long function are found.
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"

# Lines longer than 120 bytes as FILE:LINE: LENGTH (Debian's awk counts bytes: a line of UTF-8 math
# in a comment is held to a stricter limit).
long_lines() {
  find "$@" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.inc' \) -print0 |
    xargs -0 awk 'length > 120 { print FILENAME ":" FNR ": " length " bytes" }'
}
checks=$((checks + 1))
long_lines "$repo/src" "$repo/tests" "$repo/bench" >long.txt
[ -s long.txt ] && fail "lines past 120 columns:$(printf '\n'; head -20 long.txt)"

mkdir -p planted && printf '// %0130d\n' 0 >planted/long.h
checks=$((checks + 1))
[ "$(long_lines planted | wc -l)" = 1 ] || fail "the check does not find a planted 133-column line"
rm -rf planted

checker="$repo/tools/check_function_lines.py"
checks=$((checks + 1))
"$python" "$checker" "$repo/src" >functions.txt 2>&1 || fail "functions past 80 lines:$(printf '\n'; head -20 functions.txt)"
mkdir -p planted
{
  echo 'namespace tqlab {'
  echo 'int planted(int x) {'
  for i in $(seq 1 80); do echo "  x += $i;"; done
  echo '  return x;'
  echo '}'
  echo 'struct Short { int f() const { return 1; } };'
  echo '}  // namespace tqlab'
} >planted/long_function.cpp
checks=$((checks + 1))
"$python" "$checker" planted >planted.txt && fail "the check passes a planted function of 83 lines"
grep -q 'long_function.cpp:2: 83 lines planted' planted.txt ||
  fail "the check does not name the planted function: $(cat planted.txt)"
rm -rf planted
finish
