# No line of the C++ sources (src/, tests/, bench/) runs past 120 columns, the limit of
# .clang-format; a planted long line is found.
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
finish
