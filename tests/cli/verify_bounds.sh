# tqlab verify-bounds: a small run passes (exit 0) with the documented JSON; a run
# held to an impossible tolerance fails (exit 1) naming its rows; bad arguments exit 2.
source "$(dirname "$0")/lib.sh" "$@"
have_python=0
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import json' 2>/dev/null; then have_python=1; fi

small=(--dims 16,128 --bits 1,4 --samples 2000 --rotation-samples 200)
expect_exit 0 "small run" -- "$TQLAB" verify-bounds "${small[@]}" --json bounds.json
expect_contains out.txt "Theorem 1" "Theorem 2" "biased" "debiased" "prod" "0 failed" "ERRATUM" "Structured inputs" \
  "note: Theorem 2's published constant 0.047 at b = 4 disagrees"
[ "$(grep -cE '^ +(16|128) +[14] ' out.txt)" -ge 4 ] || fail "the table lacks the 4 (dim, bits) rows"
expect_contains bounds.json '"schema": "tqlab.bounds/2"' '"all_ok": true'
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 - bounds.json <<'PY' || fail "verify-bounds JSON lacks what the plots and the numpy reproduction need"
import json, math, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "tqlab.bounds/2" and doc["all_ok"] is True
rows = {(r["dim"], r["bits"]): r for r in doc["rows"]}
assert sorted(rows) == [(16, 1), (16, 4), (128, 1), (128, 4)], sorted(rows)
for (dim, bits), r in rows.items():
    assert r["ok"] is True
    t1 = r["theorem1"]
    assert t1["lower_bound"] == 4.0 ** -bits and t1["lower_bound"] <= r["d_mse_theory"] <= t1["upper_bound"]
    lo, hi = r["d_mse_empirical"]["interval"]
    assert lo <= r["d_mse_theory"] <= hi and lo < r["d_mse_empirical"]["mean"] < hi, r["d_mse_empirical"]
    assert [x["rotation"] for x in r["d_mse_rotations"]] == ["haar", "hadamard", "hadamard2"]
    # The structured-input check: one-hot inputs per rotation; one Hadamard round has an exact prediction.
    assert [x["rotation"] for x in r["one_hot"]] == ["haar", "hadamard", "hadamard2"]
    assert r["one_hot"][1]["d_mse_predicted"] is not None and r["one_hot"][0]["d_mse_predicted"] is None
    assert [c["inner_product"] for c in r["inner_products"]] == [0, 0.5, 0.9]
    for cell in r["inner_products"]:
        for name in ("biased", "debiased", "prod"):
            assert {"bias", "bias_z", "scaled_mse", "reproduction", "reproduction_z"} <= cell[name].keys()
        assert "predicted" in cell["prod"]
    for check in r["checks"]:
        assert check["z"] is None or abs(check["z"]) <= 4, check
# The numpy reproduction's columns at d = 128: D_mse 0.3609 / 0.0093 and the inner-product table.
assert abs(rows[(128, 1)]["d_mse_theory"] - 0.3609) < 5e-5 and abs(rows[(128, 4)]["d_mse_theory"] - 0.0093) < 5e-5
cell = rows[(128, 1)]["inner_products"][2]
assert cell["biased"]["reproduction"] == 13.6 and cell["debiased"]["reproduction"] == 0.16 and cell["prod"]["reproduction"] == 0.76
assert rows[(16, 1)]["inner_products"][0]["biased"]["reproduction"] is None
# Theorem 2's erratum: at b = 4 the formula gives 0.0534, the paper 0.047.
t2 = rows[(128, 4)]["theorem2"]
assert t2["paper"] == 0.047 and t2["paper_disagrees"] is True and abs(t2["formula"] - 0.0534) < 5e-5, t2
assert rows[(128, 1)]["theorem2"]["paper_disagrees"] is False
# Histograms for turboquant-explained's figures: per (dim, bits, estimator), overall and per <y, x>.
hist = doc["histograms"]
assert len(hist) == 4 * 3
for h in hist:
    total = sum(h["overall"]["counts"]) + h["overall"]["below"] + h["overall"]["above"]
    assert total == 3 * 2000, total
    assert len(h["by_inner_product"]) == 3 and len(h["overall"]["counts"]) == h["bins"]
assert doc["summary"]["failed"] == 0 and doc["summary"]["checks"] > 50
PY
fi

# --json - prints only the JSON.
expect_exit 0 "json to stdout" -- "$TQLAB" verify-bounds --dims 8 --bits 2 --samples 500 --json -
if [ "$have_python" = 1 ]; then
  /usr/bin/python3 -c 'import json,sys; d=json.load(open("out.txt")); assert d["all_ok"] and d["rows"][0]["dim"] == 8' \
    || fail "--json - did not print one JSON document"
fi

# An impossible tolerance: checks fail, exit 1, each failure named by its row.
expect_exit 1 "tolerance too tight" -- "$TQLAB" verify-bounds --dims 16 --bits 2 --samples 200 --tolerance-z 0.0001 --json tight.json
grep -q "dim 16, b 2: d_mse_empirical" err.txt || fail "the failure does not name its row and check: $(head -3 err.txt)"
grep -q "checks failed" err.txt || fail "no summary of the failures"
expect_contains tight.json '"all_ok": false'

# Bad arguments: exit 2 with one line naming the option.
expect_exit 2 "dim out of range" -- "$TQLAB" verify-bounds --dims 1,64 --bits 2
expect_error_line "--dims" "2..4096"
expect_exit 2 "bits out of range" -- "$TQLAB" verify-bounds --dims 64 --bits 9
expect_error_line "--bits" "1..8"
expect_exit 2 "too few samples" -- "$TQLAB" verify-bounds --dims 64 --bits 2 --samples 3
expect_error_line "--samples 3"
expect_exit 2 "zero tolerance" -- "$TQLAB" verify-bounds --dims 64 --bits 2 --samples 100 --tolerance-z 0
expect_error_line "--tolerance-z"
expect_exit 2 "non-numeric dims" -- "$TQLAB" verify-bounds --dims abc
expect_exit 2 "json into a missing directory" -- "$TQLAB" verify-bounds --dims 8 --bits 1 --samples 100 --json no/such/dir/b.json
[ -e no/such/dir/b.json ] && fail "a failed run left a file"
expect_exit 0 "help" -- "$TQLAB" verify-bounds --help
expect_contains out.txt "--dims" "64,128,256" "--bits" "1,2,3,4" "--samples" "20000" "--tolerance-z" "--json"
finish
