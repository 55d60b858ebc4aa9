#!/usr/bin/env bash
# A tqlab sweep as N shards run by GNU parallel on this machine, then merged: what the Slurm
# scripts (tools/slurm/) do on a cluster, on one box.
#
#   tools/parallel_sweep.sh CONFIG OUTDIR N OUT [JOBS]
#
# Runs `tqlab sweep --shard K/N --resume` for K = 1..N, JOBS at a time (default: 2), each with
# nproc / JOBS threads, writing OUTDIR/shard-K-of-N.json, then `tqlab merge` into OUT. Running it
# again after an interruption keeps the finished shards and resumes the others from their journals.
# Environment: TQLAB, the tqlab binary (default: tqlab on PATH).
set -euo pipefail
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  echo "usage: $0 CONFIG OUTDIR N OUT [JOBS]" >&2
  exit 2
fi
config=$1 outdir=$2 count=$3 out=$4 jobs=${5:-2}
tqlab=${TQLAB:-tqlab}
threads=$(($(nproc) / jobs))
[ "$threads" -ge 1 ] || threads=1
mkdir -p "$outdir"
# -q: the command's words reach tqlab as they are (paths with spaces); {} is the shard number.
if ! parallel --will-cite -q -j "$jobs" "$tqlab" sweep --config "$config" --shard "{}/$count" \
  --out "$outdir/shard-{}-of-$count.json" --threads "$threads" --resume --quiet ::: $(seq 1 "$count"); then
  echo "$0: some shards failed (their errors are above); run the same command again to resume them" >&2
  exit 1
fi
exec "$tqlab" merge "$outdir"/shard-*-of-"$count".json -o "$out" --quiet
