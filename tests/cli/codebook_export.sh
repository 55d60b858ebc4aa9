# tqlab codebook export: every format, lists, -o vs stdout, and bad arguments.
source "$(dirname "$0")/lib.sh" "$@"
have_python=0
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import json' 2>/dev/null; then have_python=1; fi

# json to stdout: 2^b ascending centroids, 2^b - 1 boundaries, the numpy reproduction's d_mse 0.1160 at d = 128, b = 2.
expect_exit 0 "json to stdout" -- "$TQLAB" codebook export --dim 128 --bits 2
cp out.txt stdout.json
expect_contains stdout.json '"schema": "tqlab.codebook/1"' '"d_mse"' '"mse_per_coord"' '"distribution": "beta"'
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 - stdout.json <<'PY' || fail "json codebook is not the d = 128, b = 2 Lloyd-Max codebook"
import json, sys
cb = json.load(open(sys.argv[1]))
assert cb["dim"] == 128 and cb["bits"] == 2, cb
c, b = cb["centroids"], cb["boundaries"]
assert len(c) == 4 and len(b) == 3
assert all(x < y for x, y in zip(c, c[1:])), c
assert all(c[i] < b[i] < c[i + 1] for i in range(3)), (c, b)
assert abs(cb["d_mse"] - 0.1160) < 5e-5, cb["d_mse"]
assert abs(cb["d_mse"] - 128 * cb["mse_per_coord"]) < 1e-15
# The paper's b = 2 levels: +-0.453/sqrt(d), +-1.51/sqrt(d).
assert abs(c[2] * 128 ** 0.5 - 0.453) < 1e-3 and abs(c[3] * 128 ** 0.5 - 1.51) < 1e-2, c
PY
fi

# -o FILE writes the same document, and stdout stays empty.
expect_exit 0 "json to a file" -- "$TQLAB" codebook export --dim 128 --bits 2 -o cb.json
cmp -s cb.json stdout.json || fail "-o cb.json differs from the stdout output"
[ -s out.txt ] && fail "-o cb.json still printed to stdout"

# Lists: --dims x --bits, every combination in one document.
expect_exit 0 "json lists" -- "$TQLAB" codebook export --dims 64,128 --bits 1,2 -o many.json
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 - many.json <<'PY' || fail "json lists do not hold the 4 codebooks"
import json, sys
doc = json.load(open(sys.argv[1]))
got = [(c["dim"], c["bits"], len(c["centroids"])) for c in doc["codebooks"]]
assert got == [(64, 1, 2), (64, 2, 4), (128, 1, 2), (128, 2, 4)], got
assert all(c["schema"] == "tqlab.codebook/1" for c in doc["codebooks"])
PY
fi

# csv: the format follows the extension; one header plus one row per level.
expect_exit 0 "csv by extension" -- "$TQLAB" codebook export --dims 64,128 --bits 1,2 -o cb.csv
[ "$(head -1 cb.csv)" = "dim,bits,distribution,index,centroid,upper_boundary,mse_per_coord,d_mse" ] || fail "csv header: $(head -1 cb.csv)"
[ "$(wc -l < cb.csv)" = 13 ] || fail "csv: expected 1 + 2 * (2 + 4) lines, got $(wc -l < cb.csv)"
grep -q '^128,2,beta,3,' cb.csv || fail "csv lacks the row of level 3 at d = 128, b = 2"
expect_exit 0 "csv to stdout" -- "$TQLAB" codebook export --dim 128 --bits 2 --format csv --dist gauss
[ "$(grep -c '^128,2,gauss,' out.txt)" = 4 ] || fail "csv to stdout: expected 4 gauss rows"

# npy: the centroids, readable by tqlab inspect; npz: centroids and boundaries of every codebook.
expect_exit 0 "npy" -- "$TQLAB" codebook export --dim 128 --bits 4 --format npy -o cb.npy
expect_exit 0 "inspect npy" -- "$TQLAB" inspect cb.npy
expect_contains out.txt "cb" "f64" "[16]"
expect_exit 0 "npz lists" -- "$TQLAB" codebook export --dims 64,128 --bits 2,3 -o cb.npz
expect_exit 0 "inspect npz" -- "$TQLAB" inspect cb.npz
expect_contains out.txt "(npz, 8 tensors)" "beta_d128_b3_centroids" "beta_d64_b2_boundaries"

# hpp: a self-contained C++17 header whose numbers are the JSON's doubles.
expect_exit 0 "hpp" -- "$TQLAB" codebook export --dims 64,128 --bits 2,3 --format hpp -o cb.hpp
expect_contains cb.hpp "#pragma once" "beta_d128_b2_centroids[4]" "kAll[]"
expect_exit 0 "json of the same" -- "$TQLAB" codebook export --dims 64,128 --bits 2,3 -o same.json
if command -v g++ >/dev/null && [ "$have_python" = 1 ]; then
  /usr/bin/python3 - same.json > check_header.cpp <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print('#include "cb.hpp"')
print("using namespace tqlab_codebook;")
print("static_assert(sizeof(kAll) / sizeof(kAll[0]) == %d);" % len(doc["codebooks"]))
for i, c in enumerate(doc["codebooks"]):
    name = "beta_d%d_b%d" % (c["dim"], c["bits"])
    print("static_assert(kAll[%d].dim == %d && kAll[%d].bits == %d);" % (i, c["dim"], i, c["bits"]))
    print("static_assert(%s.levels == %d);" % (name, len(c["centroids"])))
    for j, v in enumerate(c["centroids"]):
        print("static_assert(%s_centroids[%d] == %r);" % (name, j, v))
    for j, v in enumerate(c["boundaries"]):
        print("static_assert(%s_boundaries[%d] == %r);" % (name, j, v))
    print("static_assert(%s.d_mse == %r && %s.mse_per_coord == %r);" % (name, c["d_mse"], name, c["mse_per_coord"]))
PY
  checks=$((checks + 1))
  printf '#include "cb.hpp"\n' > alone.cpp
  g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only alone.cpp 2>hpp_err.txt || fail "cb.hpp does not compile alone: $(head -3 hpp_err.txt)"
  g++ -std=c++17 -fsyntax-only check_header.cpp 2>hpp_err.txt || fail "cb.hpp values differ from the JSON: $(head -3 hpp_err.txt)"
fi

# Bad arguments: exit 2, one error line naming the option, nothing written.
expect_exit 2 "dim out of range" -- "$TQLAB" codebook export --dim 1 --bits 2 -o bad.json
expect_error_line "--dim 1" "2..4096"
expect_exit 2 "bits out of range" -- "$TQLAB" codebook export --dim 128 --bits 9 -o bad.json
expect_error_line "--bits 9" "1..8"
expect_exit 2 "bits in a list out of range" -- "$TQLAB" codebook export --dims 64,128 --bits 2,0 -o bad.json
expect_error_line "--bits 0"
expect_exit 2 "unknown distribution" -- "$TQLAB" codebook export --dim 128 --bits 2 --dist cauchy
expect_error_line "--dist cauchy" "beta"
expect_exit 2 "unknown format" -- "$TQLAB" codebook export --dim 128 --bits 2 --format yaml
expect_error_line "--format yaml"
expect_exit 2 "npy to stdout" -- "$TQLAB" codebook export --dim 128 --bits 2 --format npy
expect_error_line "-o"
expect_exit 2 "npy with several codebooks" -- "$TQLAB" codebook export --dim 128 --bits 2,3 -o bad.npy
expect_error_line "bad.npy" "npz"
expect_exit 2 "missing --bits" -- "$TQLAB" codebook export --dim 128
expect_exit 2 "non-numeric dim" -- "$TQLAB" codebook export --dim abc --bits 2
expect_exit 2 "codebook without a subcommand" -- "$TQLAB" codebook
for file in bad.json bad.npy; do [ -e "$file" ] && fail "a failed export left $file"; done
expect_exit 0 "help" -- "$TQLAB" codebook export --help
expect_contains out.txt "--dims" "--bits" "--dist" "--format" "-o" "beta"
finish
