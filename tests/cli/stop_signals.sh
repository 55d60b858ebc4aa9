# One signal policy for every writing command (core/stop_signals.h, docs/RELIABILITY.md#signals):
# SIGTERM or SIGINT in the middle of ppl, dump, roundtrip or allocate ends it with exit 143 / 130
# within 30 s, one stderr line naming the command and the signal, no output and no temporary file
# (OUT.tmp-XXXXXX) left. (A sweep's job stops between units and keeps its journal: sweep_resume.sh.)
source "$(dirname "$0")/lib.sh" "$@"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
model="$repo/data/tinyllama_hf"
rm -rf -- *.json *.txt *.safetensors *.tmp-*
[ -x "$python" ] || { echo "SKIP: $python is absent (it restores SIGINT for the background job)"; exit 77; }

# Work of many seconds each on one thread (the bundled tokenizer reads a byte as a token).
for i in 1 2 3 4 5 6 7 8; do cat /usr/share/common-licenses/GPL-3; done >text.txt
"$TQLAB" synth -o kv.safetensors --layers 8 --kv-heads 4 --q-heads 8 --tokens 4096 --dim 128 >/dev/null 2>&1 ||
  fail "synth failed"
slow=tq:b=8,rot=haar,qjl=prod  # about 4 s for the roundtrip of kv.safetensors on one thread
cat >data.json <<'JSON'
{"name": "signals", "data": {"path": "kv.safetensors"}, "metrics": {"attention": {"chunk": 512}}}
JSON

# stop NAME OUT SIGNAL CODE -- COMMAND...: starts COMMAND (writing OUT), waits until its temporary
# output exists, lets it work a moment, sends SIGNAL and checks what the policy promises.
stop() {
  local name=$1 out=$2 signal=$3 code=$4 pid got begin elapsed i
  shift 5
  rm -f -- "$out" "$out".tmp-*
  # A background job of a script starts with SIGINT ignored, which tqlab keeps (as nohup does):
  # restore the default disposition before exec'ing it.
  "$python" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$@" >/dev/null 2>stop_err.txt &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    compgen -G "$out.tmp-*" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.2
  checks=$((checks + 1))
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    fail "$name SIG$signal: finished (exit $?) before the signal; give it more work: $(head -2 stop_err.txt)"
    return
  fi
  begin=$(date +%s)
  kill -"$signal" "$pid"
  wait "$pid"
  got=$?
  elapsed=$(($(date +%s) - begin))
  [ "$got" = "$code" ] || fail "$name SIG$signal: exit $got, expected $code: $(head -3 stop_err.txt)"
  [ "$elapsed" -le 30 ] || fail "$name SIG$signal: took ${elapsed}s to stop"
  [ "$(grep -c . stop_err.txt)" = 1 ] || fail "$name SIG$signal: expected one line on stderr, got: $(cat stop_err.txt)"
  grep -qF "tqlab $name stopped by SIG$signal" stop_err.txt ||
    fail "$name SIG$signal: the line does not say what stopped: $(cat stop_err.txt)"
  [ -e "$out" ] && fail "$name SIG$signal: an output '$out' was written"
  compgen -G "$out.tmp-*" >/dev/null && fail "$name SIG$signal: left $(ls -- "$out".tmp-*)"
}

for pair in "TERM 143" "INT 130"; do
  set -- $pair
  signal=$1 code=$2
  stop ppl ppl.json "$signal" "$code" -- "$TQLAB" ppl --model "$model" --text text.txt --ctx 256 --k tq:b=3 --v tq:b=3 \
    --seeds 0,1,2,3 --threads 1 -o ppl.json
  stop dump dump.safetensors "$signal" "$code" -- "$TQLAB" dump --model "$model" --text text.txt --ctx 256 \
    --dtype f32 --logits --threads 1 -o dump.safetensors
  stop roundtrip rt.safetensors "$signal" "$code" -- "$TQLAB" roundtrip kv.safetensors --k "$slow" --v "$slow" --q "$slow" \
    --threads 1 -o rt.safetensors
  stop allocate alloc.json "$signal" "$code" -- "$TQLAB" allocate --config data.json --budget 4 --no-cache --threads 1 \
    -o alloc.json
done
finish
