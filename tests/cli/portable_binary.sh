# Portable binaries with runtime kernel dispatch (core/kernel_set.h):
# - tqlab --version names the kernels in use, and TQLAB_KERNELS forces a form
#   (an unknown one, or one the CPU lacks, is one error line and exit 2);
# - every form the CPU runs writes the same bytes through `tqlab roundtrip`, and the same
#   numbers through `tqlab sweep`;
# - in the default (TQLAB_NATIVE=OFF) build no function outside the dispatched
#   kernels (namespace tqlab::simd) contains an AVX instruction, so the binary
#   starts and runs its portable kernels on any x86-64 CPU. That is what would
#   break if -march=native crept back, or if a kernel file were compiled with
#   -mavx2 and the linker kept its AVX copy of an inline function
#   (core/simd_target.h).
source "$(dirname "$0")/lib.sh" "$@"
rm -f -- *.safetensors *.txt

# The kernel forms and the instructions each names come from the binary itself
# (core/kernel_set.cpp's table), never spelled here: machines of this kind differ
# (AVX-512 or AVX2-only), and a pattern written on one of them fails on the other.
expect_exit 2 "unknown TQLAB_KERNELS" -- env TQLAB_KERNELS=sse9 "$TQLAB" list
expect_error_line "TQLAB_KERNELS=sse9" "expected auto, portable,"
# "expected auto, portable, avx2 or avx512" -> every form the binary knows.
read -r -a known_forms <<<"$(sed -n 's/.*expected auto, \(.*\)$/\1/p' err.txt | sed 's/,/ /g; s/ or / /')"
[ "${#known_forms[@]}" -ge 2 ] || fail "cannot read the kernel forms from: $(cat err.txt)"
[ "${known_forms[0]}" = portable ] || fail "the first form is not portable: ${known_forms[*]}"

# The forms this CPU runs, each --version line naming its instructions.
forms=()
widest_line=""
for form in "${known_forms[@]}"; do
  if env TQLAB_KERNELS="$form" "$TQLAB" --version >version.txt 2>/dev/null; then
    forms+=("$form")
    grep -qE '^tqlab [0-9.]+ \([0-9a-z]+\) kernels: [a-z0-9]+(\+[a-z0-9]+)*$' version.txt ||
      fail "--version with TQLAB_KERNELS=$form does not name the kernels: $(cat version.txt)"
    widest_line=$(cat version.txt)
  else
    expect_exit 2 "TQLAB_KERNELS=$form on a CPU without it" -- env TQLAB_KERNELS="$form" "$TQLAB" list
    expect_error_line "TQLAB_KERNELS=$form" "this CPU cannot run"
  fi
done
echo "forms this CPU runs: ${forms[*]}"

expect_exit 0 "--version, portable forced" -- env TQLAB_KERNELS=portable "$TQLAB" --version
expect_contains out.txt "kernels: portable"
# Without TQLAB_KERNELS the widest form this CPU runs is the one in use.
expect_exit 0 "--version" -- "$TQLAB" --version
[ "$(cat out.txt)" = "$widest_line" ] ||
  fail "--version names '$(cat out.txt)', the widest form this CPU runs prints '$widest_line'"

expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 2 --kv-heads 2 --q-heads 2 --tokens 300 --dim 96
expect_exit 0 "synth" -- "$TQLAB" synth -o kv128.safetensors --layers 1 --kv-heads 2 --q-heads 2 --tokens 300 --dim 128
# Head dim 96: Haar (dense tiles and edges) for whole heads, Hadamard for 32-blocks; 128: Hadamard
# in registers, b = 8 (gathers), QJL.
for form in "${forms[@]}"; do
  expect_exit 0 "roundtrip with $form kernels" -- env TQLAB_KERNELS=$form \
    "$TQLAB" roundtrip kv.safetensors --k tq:b=4 --v tq:b=3,block=32 --q tq:b=2,rot=haar -o "rt_$form.safetensors"
  expect_exit 0 "roundtrip at head dim 128 with $form kernels" -- env TQLAB_KERNELS=$form \
    "$TQLAB" roundtrip kv128.safetensors --k tq:b=4 --v tq:b=8 --q tq:b=3,qjl=prod -o "rt128_$form.safetensors"
  if [ "$form" != portable ]; then
    cmp -s rt_portable.safetensors "rt_$form.safetensors" || fail "$form kernels wrote other bytes than portable ones"
    cmp -s rt128_portable.safetensors "rt128_$form.safetensors" ||
      fail "$form kernels wrote other bytes than portable ones (head dim 128)"
  fi
done

# The sweep's metrics (attention KL, top-k and cosine run in dispatched kernels too, as do the
# quantizers under them): the same numbers from every form, to the last bit (tolerance 0).
cat > sweep.json <<'JSON'
{"name": "forms", "data": {"path": "kv.safetensors"},
 "grid": {"k": ["tq:b=2", "tq:b=4,rot=haar"], "v": ["tq:b=3"]},
 "metrics": {"attention": {"chunk": 128}, "needle": {"trials": 8}}}
JSON
for form in "${forms[@]}"; do
  expect_exit 0 "sweep with $form kernels" -- env TQLAB_KERNELS=$form \
    "$TQLAB" sweep --config sweep.json --quiet --out "sweep_$form.json"
  if [ "$form" != portable ]; then
    expect_exit 0 "sweep results of $form and portable kernels, tolerance 0" -- \
      "$TQLAB" diff --rtol 0 --atol 0 sweep_portable.json "sweep_$form.json"
  fi
done

if [ "${TQLAB_NATIVE:-OFF}" = ON ]; then
  echo "note: a -DTQLAB_NATIVE=ON build targets this CPU on purpose; its instructions are not checked"
elif ! command -v objdump >/dev/null; then
  echo "note: objdump is absent; the binary's instructions are not checked"
else
  # Functions holding a VEX/EVEX-encoded instruction (mnemonic v..., or ymm/zmm/mask registers).
  objdump -d --no-show-raw-insn -C "$TQLAB" | awk '
    /^[0-9a-f]+ <.*>:$/ { name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name); next }
    /^ *[0-9a-f]+:\t/ {
      split($0, parts, "\t"); insn = parts[2]
      if (insn ~ /^v[a-z]/ || insn ~ /%[yz]mm|%k[0-7]/) used[name] = 1
    }
    END { for (name in used) print name }' >avx_functions.txt
  grep -c 'tqlab::simd::' avx_functions.txt >/dev/null || fail "no AVX instruction in tqlab::simd: the SIMD kernels are missing"
  if grep -v 'tqlab::simd::' avx_functions.txt >outside.txt; then
    fail "$(wc -l <outside.txt) functions outside tqlab::simd use AVX instructions, e.g. $(head -3 outside.txt | cut -c1-120 | tr '\n' ';')"
  fi
fi

finish
