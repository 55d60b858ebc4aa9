#!/usr/bin/env bash
# Times `tqlab roundtrip` on large K/V files against `cp` of the same file (and, with --peers,
# the numpy TurboQuant peer on the same number of vectors), in one run on this machine.
#
# usage: tools/bench_roundtrip.sh [--tqlab BINARY] [--peers DIR] [--repeat N] [--no-1g] [--dir DIR]
#   --tqlab   the binary to time (default: build/tqlab, else build-dev/tqlab)
#   --peers   a directory holding numpy_turboquant.py; skipped with a message when absent
#   --repeat  runs per command; the fastest wall time is kept (default 3)
#   --no-1g   only the 256 MiB file (the 1 GiB one shows that peak RSS does not grow with the file)
#   --dir     where the temporary files go (default: a new directory under ${TMPDIR:-/tmp})
# Files: 256 MiB = one layer, K and V each f32 [8 heads, 32768 tokens, 128] ("head token dim");
# 1 GiB = four such layers. `cp + fsync` is the copy made durable, as `tqlab roundtrip --fsync`
# makes its output (without --fsync, tqlab leaves it in the page cache, as cp does).
# Every run starts after a `sync`, so that no earlier run's writeback competes with it.
# Output: one line per command (wall s, user s, sys s, peak RSS MiB)
# and the ratios the docs quote.
set -euo pipefail
cd "$(dirname "$0")/.."

tqlab=""
peers=""
repeat=3
big=1
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tqlab) tqlab=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --no-1g) big=0; shift ;;
    --dir) dir=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_roundtrip.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$tqlab" ]; then
  for candidate in build/tqlab build-dev/tqlab; do
    [ -x "$candidate" ] && { tqlab=$candidate; break; }
  done
fi
[ -n "$tqlab" ] && [ -x "$tqlab" ] || { echo "bench_roundtrip.sh: no tqlab binary (build it, or give --tqlab)" >&2; exit 2; }
tqlab=$(realpath "$tqlab")
python=/usr/bin/python3
"$python" -c 'import numpy' 2>/dev/null || { echo "bench_roundtrip.sh: needs $python with numpy" >&2; exit 2; }

if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/bench_roundtrip.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"

# make_kv PATH LAYERS: K/V f32 [8, 32768, 128] per layer, written tensor by tensor (little memory).
make_kv() {
  "$python" - "$1" "$2" <<'PY'
import json, struct, sys
import numpy as np
path, layers = sys.argv[1], int(sys.argv[2])
shape = (8, 32768, 128)
size = 4 * shape[0] * shape[1] * shape[2]
header = {"__metadata__": {"layout": "head token dim"}}
names = [f"layers.{layer}.{role}" for layer in range(layers) for role in "kv"]
for i, name in enumerate(names):
    header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [i * size, (i + 1) * size]}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
rng = np.random.default_rng(1)
with open(path, "wb") as out:
    out.write(struct.pack("<Q", len(text)) + text)
    for name in names:
        rng.standard_normal(shape, dtype=np.float32).tofile(out)
PY
}

# measure LABEL COMMAND...: runs it --repeat times, prints the fastest run's figures and
# sets $wall to its wall time (seconds).
measure() {
  local label=$1
  shift
  local best=""
  for _ in $(seq "$repeat"); do
    local line
    sync
    line=$("$python" - "$@" <<'PY'
import resource, subprocess, sys, time
start = time.monotonic()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if code != 0:
    sys.exit(f"{' '.join(sys.argv[1:])}: exit {code}")
print(f"{wall:.3f} {usage.ru_utime:.3f} {usage.ru_stime:.3f} {usage.ru_maxrss / 1024:.0f}")
PY
)
    if [ -z "$best" ] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best=$line; fi
  done
  read -r wall user sys rss <<<"$best"
  printf '%-34s wall %7.3f s  user %7.3f s  sys %7.3f s  peak RSS %6s MiB\n' "$label" "$wall" "$user" "$sys" "$rss"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
echo "tqlab: $tqlab ($("$tqlab" --version 2>/dev/null | head -1))"
echo "files in $dir ($(df -h "$dir" | awk 'NR == 2 {print $1}')); fastest of $repeat runs"

sizes=(256)
[ "$big" = 1 ] && sizes+=(1024)
for size in "${sizes[@]}"; do
  input=$dir/kv$size.safetensors
  make_kv "$input" $((size / 256))
  cp "$input" "$dir/warm" && rm -f "$dir/warm"  # the input in the page cache, as for every command below
  echo
  echo "== $size MiB: $((size / 256)) layer(s) x K, V f32 [8, 32768, 128]; tq:b=4 for K and V"
  measure "cp" cp "$input" "$dir/copy.safetensors"
  cp_wall=$wall
  rm -f "$dir/copy.safetensors"
  # The same copy made durable: what `tqlab roundtrip --fsync` is compared with.
  measure "cp + fsync (dd conv=fsync)" dd if="$input" of="$dir/copy.safetensors" bs=8M conv=fsync status=none
  sync_wall=$wall
  rm -f "$dir/copy.safetensors"
  for threads in 1 2; do
    measure "tqlab roundtrip --threads $threads" "$tqlab" roundtrip "$input" -o "$dir/out.safetensors" \
      --k tq:b=4 --v tq:b=4 --threads "$threads" --quiet
    echo "  ratio to cp: $(ratio "$wall" "$cp_wall")x"
    eval "tq_wall_$threads=$wall"
    rm -f "$dir/out.safetensors"
  done
  measure "tqlab roundtrip --threads 2 --fsync" "$tqlab" roundtrip "$input" -o "$dir/out.safetensors" \
    --k tq:b=4 --v tq:b=4 --threads 2 --quiet --fsync
  echo "  ratio to cp + fsync: $(ratio "$wall" "$sync_wall")x"
  rm -f "$dir/out.safetensors"
  if [ "$size" = 256 ]; then
    if [ -n "$peers" ] && [ -f "$peers/numpy_turboquant.py" ]; then
      # The same number of vectors: 2 tensors x 8 heads x 32768 tokens = 524288 of dim 128.
      measure "numpy peer (b=4, 524288 vectors)" "$python" "$peers/numpy_turboquant.py" 4 524288
      echo "  peer / tqlab --threads 1: $(ratio "$wall" "$tq_wall_1")x, --threads 2: $(ratio "$wall" "$tq_wall_2")x"
    else
      echo "numpy peer: skipped (give --peers DIR holding numpy_turboquant.py)"
    fi
  fi
  rm -f "$input"
done
