# A sweep stopped and resumed through the real binary: SIGKILL at several moments, then --resume
# (on another thread count) writes the uninterrupted document byte for byte outside "timing";
# SIGTERM and SIGINT stop it within 30 s with exit 143 / 130, one line saying how to resume, the
# journal kept and nothing else left; a journal of another config, or one met without --resume,
# is refused (exit 2); an output that cannot be written (file size limit, folder removed) is a
# clear error that leaves the journal and the earlier output as they were; a results file re-runs
# itself (--config RESULTS.json), refusing to overwrite itself and warning when the data changed.
source "$(dirname "$0")/lib.sh" "$@"
rm -rf -- *.safetensors *.json *.txt *.journal *.tmp-* gone
[ -x "$python" ] || { echo "SKIP: $python is absent (the checks read JSON with it)"; exit 77; }

# 32 units (16 layers x 2 kv heads) of about 0.1-0.2 s each on one thread in Release.
expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 16 --kv-heads 2 --q-heads 4 --tokens 768 --dim 64
cat >config.json <<'JSON'
{"name": "resume", "data": {"path": "kv.safetensors"},
 "grid": {"k": ["tq:b=3", "tq:b=4", "q4_0"], "v": ["tq:b=3", "tq:b=4"]},
 "metrics": {"attention": {"chunk": 768}, "needle": {"trials": 8}},
 "seeds": [0, 1]}
JSON
start=$(date +%s.%N)
expect_exit 0 "uninterrupted sweep" -- "$TQLAB" sweep --config config.json --out whole.json --threads 1 --quiet
whole_seconds=$("$python" -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")

# journal_units FILE: the unit records a journal holds.
journal_units() {
  local count
  count=$(grep -c '"unit":' "$1" 2>/dev/null)
  echo "${count:-0}"
}
# leftovers: what a stopped sweep must not leave (the atomic writer's temporaries).
leftovers() { ls -- *.tmp-* 2>/dev/null; }

# ---------------------------------------------------------------- SIGKILL, then --resume
# Kills at a fraction of the uninterrupted time; at least one must land mid-run (a journal with
# some but not every unit) for the test to mean anything.
mid_run=0
for fraction in 0.15 0.45 0.75; do
  rm -f killed.json killed.json.journal
  delay=$("$python" -c "print($whole_seconds * $fraction)")
  "$TQLAB" sweep --config config.json --out killed.json --threads 2 --quiet >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  units=$(journal_units killed.json.journal)
  [ "$units" -gt 0 ] && [ "$units" -lt 32 ] && mid_run=$((mid_run + 1))
  if [ -e killed.json.journal ]; then
    expect_exit 2 "kill at $fraction: a journal without --resume is refused" -- \
      "$TQLAB" sweep --config config.json --out killed.json --threads 1 --quiet
    expect_error_line "killed.json.journal" "--resume"
  fi
  expect_exit 0 "kill at $fraction ($units units journalled): --resume on 1 thread" -- \
    "$TQLAB" sweep --config config.json --out killed.json --threads 1 --resume --quiet
  same_outside_timing whole.json killed.json || fail "kill at $fraction: the resumed document differs from whole.json"
  [ -e killed.json.journal ] && fail "kill at $fraction: the journal is still there after the document was written"
  [ -n "$(leftovers)" ] && fail "kill at $fraction: left $(leftovers)"
done
[ "$mid_run" -ge 1 ] || fail "no SIGKILL landed mid-run (the sweep took ${whole_seconds}s): the kills tested nothing"
expect_exit 0 "--resume of a finished output does nothing" -- \
  "$TQLAB" sweep --config config.json --out killed.json --resume
expect_contains err.txt "already holds"

# ---------------------------------------------------------------- SIGTERM and SIGINT
# stop SIGNAL CODE: stops a sweep a third of the way in; it must exit CODE within 30 s, say how to
# resume on one line, keep its journal and leave no output and no temporary.
stop() {
  local signal=$1 code=$2 pid got begin elapsed
  rm -f stopped.json stopped.json.journal
  # A background job of a script starts with SIGINT ignored, which tqlab keeps (as nohup does):
  # restore the default disposition before exec'ing it.
  "$python" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$TQLAB" sweep --config config.json --out stopped.json --threads 2 --quiet >/dev/null 2>stop_err.txt &
  pid=$!
  sleep "$("$python" -c "print($whole_seconds / 3)")"
  begin=$(date +%s)
  kill -"$signal" "$pid"
  wait "$pid"
  got=$?
  elapsed=$(($(date +%s) - begin))
  checks=$((checks + 1))
  [ "$got" = "$code" ] || fail "SIG$signal: exit $got, expected $code: $(head -3 stop_err.txt)"
  [ "$elapsed" -le 30 ] || fail "SIG$signal: took ${elapsed}s to stop"
  [ "$(wc -l <stop_err.txt)" = 1 ] || fail "SIG$signal: expected one line on stderr, got: $(cat stop_err.txt)"
  grep -q -- "--resume" stop_err.txt || fail "SIG$signal: the message does not say how to resume: $(cat stop_err.txt)"
  [ -s stopped.json.journal ] || fail "SIG$signal: the journal is gone"
  [ -e stopped.json ] && fail "SIG$signal: an output was written"
  [ -n "$(leftovers)" ] && fail "SIG$signal: left $(leftovers)"
  expect_exit 0 "SIG$signal: --resume" -- "$TQLAB" sweep --config config.json --out stopped.json --resume --quiet
  same_outside_timing whole.json stopped.json || fail "SIG$signal: the resumed document differs from whole.json"
}
stop TERM 143
stop INT 130

# ---------------------------------------------------------------- a journal of another config
rm -f other.json other.json.journal
"$TQLAB" sweep --config config.json --out other.json --threads 1 --quiet >/dev/null 2>&1 &
pid=$!
sleep "$("$python" -c "print($whole_seconds / 3)")"
kill -TERM "$pid"
wait "$pid"
sed 's/"seeds": \[0, 1\]/"seeds": [0, 2]/' config.json >config2.json
expect_exit 2 "--resume with a journal of another config" -- \
  "$TQLAB" sweep --config config2.json --out other.json --resume --quiet
expect_error_line "other.json.journal" "config"
[ -s other.json.journal ] || fail "a refused resume removed the other config's journal"

# ---------------------------------------------------------------- an output that cannot be written
# A file size limit (8 KiB) above the journal (one unit, no attention: about 4 KB) and below the
# document (about 14 KB): the journal is written whole, the document is not (EFBIG). The earlier
# output and the journal stay as they were, and --resume then writes the document.
expect_exit 0 "synth a one-unit dump" -- "$TQLAB" synth -o small.safetensors --layers 1 --kv-heads 1 --q-heads 2 \
  --tokens 64 --dim 64
cat >small.json <<'JSON'
{"name": "small", "data": {"path": "small.safetensors"},
 "grid": {"k": ["tq:b=3", "tq:b=4", "q4_0"], "v": ["tq:b=3", "tq:b=4"]},
 "metrics": {"attention": false, "needle": false}, "seeds": [0, 1]}
JSON
expect_exit 0 "the small sweep uninterrupted" -- "$TQLAB" sweep --config small.json --out small_whole.json --quiet
printf 'an earlier output\n' >limited.json
cp limited.json earlier.txt
expect_exit 2 "output beyond the file size limit" -- \
  bash -c 'ulimit -f 8; exec "$@"' _ "$TQLAB" sweep --config small.json --out limited.json --quiet
expect_error_line "cannot write 'limited.json'" "limited.json.journal" "--resume"
cmp -s limited.json earlier.txt || fail "the failed write changed the earlier output"
[ "$(journal_units limited.json.journal)" = 1 ] || fail "the journal should hold the one unit after a failed write"
[ -n "$(leftovers)" ] && fail "the failed write left $(leftovers)"
expect_exit 0 "--resume after the failed write" -- "$TQLAB" sweep --config small.json --out limited.json --resume --quiet
same_outside_timing small_whole.json limited.json || fail "the document resumed after a failed write differs"

# The output folder removed while the sweep runs.
mkdir gone
"$TQLAB" sweep --config config.json --out gone/out.json --threads 1 --quiet >/dev/null 2>gone_err.txt &
pid=$!
sleep "$("$python" -c "print($whole_seconds / 3)")"
rm -rf gone
wait "$pid"
got=$?
checks=$((checks + 1))
[ "$got" = 2 ] || fail "output folder removed mid-run: exit $got, expected 2: $(cat gone_err.txt)"
[ "$(wc -l <gone_err.txt)" = 1 ] && grep -q "gone/out.json" gone_err.txt ||
  fail "output folder removed mid-run: expected one line naming gone/out.json: $(cat gone_err.txt)"

# ---------------------------------------------------------------- a result re-runs itself
expect_exit 0 "re-run whole.json" -- "$TQLAB" sweep --config whole.json --out again.json --quiet
expect_exit 0 "the re-run shows no difference" -- "$TQLAB" diff whole.json again.json
same_outside_timing whole.json again.json || fail "the re-run differs from whole.json outside timing"
expect_exit 2 "a re-run may not overwrite the results it reads" -- "$TQLAB" sweep --config whole.json --out whole.json
expect_error_line "whole.json" "results file being re-run"
cp kv.safetensors kv.orig
expect_exit 0 "synth other data in the same place" -- \
  "$TQLAB" synth -o kv.safetensors --layers 16 --kv-heads 2 --q-heads 4 --tokens 768 --dim 64 --seed 7
expect_exit 0 "re-run over changed data" -- "$TQLAB" sweep --config whole.json --out changed.json --quiet
expect_contains err.txt "sha256"
mv kv.orig kv.safetensors

finish
