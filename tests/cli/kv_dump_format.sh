# tools/dump_kv.py's file half, tools/kv_dump_format.py, on arrays shaped like real models'
# (GQA 32/8 heads at head dim 128 in bfloat16 bits, 8/2 at 64 in float16 with two sequences,
# MLA K 192 / V 128 in float32): the bytes are the source arrays in batch head token dim
# (checked by a parser of the test's own), `tqlab inspect --json` reads names, dtypes, shapes,
# metadata and statistics back, and `tqlab sweep` runs on each dump with its default templates,
# the layout from its metadata and the attention scale it records. The writer's validation
# errors, and dump_kv.py's message where torch/transformers are missing, are checked too.
# Helper: tests/cli/kv_dump_format.py. The torch half (model loading, hooks) is not tested here.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt

require_numpy "tools/kv_dump_format.py is numpy only"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"
helper="$(cd "$(dirname "$0")" && pwd)/kv_dump_format.py"

"$python" "$helper" "$tools" refusals >refusals.txt 2>&1 || fail "writer validation: $(tail -3 refusals.txt)"
"$python" "$helper" "$tools" build >build.txt 2>&1 || { echo "FAIL: building the dumps: $(tail -5 build.txt)"; exit 1; }

for name in gqa128 gqa64 mla; do
  expect_exit 0 "inspect --json $name" -- "$TQLAB" inspect --json "$name.safetensors"
  cp out.txt "inspect_$name.json"
  "$python" "$helper" "$tools" check-inspect "$name" "inspect_$name.json" >check.txt 2>&1 ||
    fail "inspect of $name: $(tail -3 check.txt)"

  scale=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["attention_scale"])' "inspect_$name.json")
  cat > "sweep_$name.json" <<JSON
{"name": "$name", "data": {"path": "$name.safetensors"},
 "runs": [{"k": "tq:b=4", "v": "tq:b=4"}, {"k": "q8_0", "v": "q8_0"}],
 "metrics": {"attention": {"chunk": 32, "scale": $scale}, "needle": {"trials": 8, "synth_trials": 1}},
 "out": "result_$name.json"}
JSON
  expect_exit 0 "sweep $name" -- "$TQLAB" sweep --config "sweep_$name.json" --quiet
  "$python" "$helper" "$tools" check-sweep "$name" "result_$name.json" >check.txt 2>&1 ||
    fail "sweep of $name: $(tail -3 check.txt)"
done

# ------------------------------------------------- dump_kv.py without torch
expect_exit 0 "dump_kv.py --help" -- "$python" "$tools/dump_kv.py" --help
expect_contains out.txt "--model" "--no-queries" "--max-tokens"
if "$python" -c 'import torch' 2>/dev/null; then
  echo "note: torch is importable here; the missing-torch message is not checked"
else
  expect_exit 2 "dump_kv.py without torch" -- "$python" "$tools/dump_kv.py" --model some/model -o x.safetensors
  expect_error_line "needs PyTorch and transformers" "pip install torch transformers"
  [ -e x.safetensors ] && fail "dump_kv.py wrote a file without torch"
fi
finish
