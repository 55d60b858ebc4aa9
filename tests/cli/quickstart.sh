# The README's main command, `tqlab sweep --config configs/quickstart.json`, on the sample the
# demo writes, gives the numbers committed in results/quickstart.json: any change in numbers
# shows up in the commit that makes it (regenerate with tools/make_results.sh).
# Paths (the sample is written here) and the git commit may differ; numbers agree to 1e-9.
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.json *.txt
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: $python is absent (the comparison reads JSON with it)"; exit 77; }
root="$(cd "$(dirname "$0")/../.." && pwd)"

expect_exit 0 "synth (the demo's sample)" -- "$TQLAB" synth -o sample_kv.safetensors
expect_exit 0 "quickstart sweep" -- "$TQLAB" sweep --config "$root/configs/quickstart.json" \
  --data sample_kv.safetensors --out quickstart.json --quiet
"$python" "$root/tools/compare_results.py" "$root/results/quickstart.json" quickstart.json \
  --ignore path --ignore git_commit >compare.txt || fail "quickstart results differ from results/quickstart.json:
$(head -20 compare.txt)"
finish
