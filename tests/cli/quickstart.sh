# The README's main command, `tqlab sweep --config configs/quickstart.json`, on the sample the
# demo writes, gives the numbers committed in results/quickstart.json: any change in numbers
# shows up in the commit that makes it (regenerate with tools/make_results.sh).
# `tqlab diff` compares them: paths and the git commit are context, numbers agree to its
# default tolerances (rtol 1e-9, atol 1e-12); a change within the standard error counts too.
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.json *.txt
root="$(cd "$(dirname "$0")/../.." && pwd)"

expect_exit 0 "synth (the demo's sample)" -- "$TQLAB" synth -o sample_kv.safetensors
expect_exit 0 "quickstart sweep" -- "$TQLAB" sweep --config "$root/configs/quickstart.json" \
  --data sample_kv.safetensors --out quickstart.json --quiet
expect_exit 0 "results/quickstart.json reproduced" -- "$TQLAB" diff "$root/results/quickstart.json" quickstart.json
[ "$failures" = 0 ] || sed 's/^/    /' out.txt | head -30 >&2
finish
