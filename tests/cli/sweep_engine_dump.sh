# An engine's run on a dump (the offline metric families): the sweep measures what the engine's cache
# stores, read back — the same vectors `tqlab roundtrip --engine` writes. On the real dump
# tinyllama_qkv.safetensors of the shared data folder (head dim 64: llama.cpp rotates its quantized
# cache), the sweep's k_rel_mse and v_rel_mse of `"engine": "llama.cpp"` runs equal sum |x - x~|^2 /
# sum |x|^2 computed in numpy over the roundtrip's output; the rotation and the channel order each
# change the numbers against plain q4_0; what the engine cannot run is refused.
source "$(dirname "$0")/lib.sh" "$@"
require_numpy "the check is numpy"
require_real_dump
tools="$(cd "$(dirname "$0")/../.." && pwd)/tools"
# Layers 0 and 1 in float32: the roundtrip writes its input's dtype, and rounding its output to the
# dump's 16 bits would add an error of its own to the comparison.
PYTHONPATH="$tools" "$python" - "$dump" in.safetensors <<'PY' || { echo "FAIL: preparing the input"; exit 1; }
import sys
import numpy as np
from kv_dump_format import read_safetensors, write_safetensors
tensors, metadata = read_safetensors(sys.argv[1])
kept = {name: array.astype(np.float32) for name, array in tensors.items()
        if name.split(".")[:2] in (["layers", "0"], ["layers", "1"])}
write_safetensors(sys.argv[2], kept, metadata)
PY
dump=$PWD/in.safetensors

cat >engines.json <<EOF
{"name": "engines-on-a-dump", "data": {"path": "$dump"},
 "metrics": {"needle": false}, "seeds": [0],
 "runs": [{"k": "q4_0", "v": "q4_0", "engine": "llama.cpp"},
          {"k": "q4_0", "v": "q4_0", "engine": "llama.cpp:rot=off"},
          {"k": "q8_0", "v": "iq4_nl", "engine": "llama.cpp"},
          {"k": "q4_0", "v": "q4_0"}]}
EOF
expect_exit 0 "sweep with llama.cpp runs on a dump" -- "$TQLAB" sweep --config engines.json --out engines.out.json --quiet
# The table names each run's engine: the two q4_0 rows of llama.cpp are not the plain one.
expect_contains out.txt "engine" "llama.cpp:rot=off"
expect_exit 0 "roundtrip --engine llama.cpp q4_0" -- \
  "$TQLAB" roundtrip "$dump" -o rot.safetensors --engine llama.cpp --k q4_0 --v q4_0 --quiet
expect_exit 0 "roundtrip --engine llama.cpp:rot=off q4_0" -- \
  "$TQLAB" roundtrip "$dump" -o norot.safetensors --engine llama.cpp:rot=off --k q4_0 --v q4_0 --quiet
expect_exit 0 "roundtrip --engine llama.cpp q8_0/iq4_nl" -- \
  "$TQLAB" roundtrip "$dump" -o mixed.safetensors --engine llama.cpp --k q8_0 --v iq4_nl --quiet

checks=$((checks + 1))
PYTHONPATH="$tools" "$python" - "$dump" engines.out.json rot.safetensors norot.safetensors mixed.safetensors \
  >check.txt 2>&1 <<'PY' || fail "the sweep's engine runs disagree with the roundtrip: $(tail -5 check.txt)"
import json, sys
import numpy as np
from kv_dump_format import read_safetensors

dump, results = read_safetensors(sys.argv[1])[0], json.load(open(sys.argv[2]))
def rel_mse(decoded_path, role):
    decoded = read_safetensors(decoded_path)[0]
    error = energy = 0.0
    for layer in (0, 1):
        x = dump[f"layers.{layer}.{role}"].astype(np.float64)
        y = decoded[f"layers.{layer}.{role}"].astype(np.float64)
        error += ((x - y) ** 2).sum()
        energy += (x ** 2).sum()
    return error / energy
runs = {(r["k"], r["v"], r.get("engine", "tqlab")): r for r in results["runs"]}
def metric(run, name):
    return runs[run]["metrics"][name]["mean"]
ok = True
for run, path in [(("q4_0", "q4_0", "llama.cpp"), sys.argv[3]), (("q4_0", "q4_0", "llama.cpp:rot=off"), sys.argv[4]),
                  (("q8_0", "iq4_nl", "llama.cpp"), sys.argv[5])]:
    for role, name in (("k", "k_rel_mse"), ("v", "v_rel_mse")):
        want, got = rel_mse(path, role), metric(run, name)
        good = abs(got - want) <= 2e-6 * want
        ok &= good
        print(f"{run} {name}: sweep {got:.9g}, numpy over the roundtrip {want:.9g}{'' if good else '  MISMATCH'}")
plain = metric(("q4_0", "q4_0", "tqlab"), "k_rel_mse")
rotated = metric(("q4_0", "q4_0", "llama.cpp"), "k_rel_mse")
reordered = metric(("q4_0", "q4_0", "llama.cpp:rot=off"), "k_rel_mse")
print(f"k_rel_mse q4_0: plain {plain:.6g}, llama.cpp rot=off (GGML channel order) {reordered:.6g}, rotated {rotated:.6g}")
ok &= rotated != plain and reordered != plain and rotated != reordered
ok &= all(metric(run, "attn_kl") is not None for run in runs)
sys.exit(0 if ok else 1)
PY
cat check.txt

# What the engine cannot run, on a dump as end to end.
cat >bad_type.json <<EOF
{"data": {"path": "$dump", "layers": [0]}, "seeds": [0], "runs": [{"k": "tq:b=3", "v": "q4_0", "engine": "llama.cpp"}]}
EOF
expect_refused "a tq spec with engine llama.cpp on a dump" "runs[0]" "llama.cpp" "q4_0" -- \
  "$TQLAB" sweep --config bad_type.json --out bad.json --quiet
cat >bad_window.json <<EOF
{"data": {"path": "$dump", "layers": [0]}, "seeds": [0],
 "runs": [{"k": "q4_0", "v": "q4_0", "window": 16, "engine": "llama.cpp"}]}
EOF
expect_refused "a window with engine llama.cpp on a dump" "runs[0]" "llama.cpp" -- \
  "$TQLAB" sweep --config bad_window.json --out bad.json --quiet
cat >bad_preset.json <<EOF
{"data": {"path": "$dump", "layers": [0]}, "seeds": [0],
 "runs": [{"k": "vllm_tq_key:b=3,nc", "v": "vllm_uniform:b=3", "engine": "vllm:preset=turboquant_3bit_nc"}]}
EOF
expect_refused "a vLLM preset on a dump" "runs[0]" "end to end only" "vllm_uniform:b=3" -- \
  "$TQLAB" sweep --config bad_preset.json --out bad.json --quiet
finish
