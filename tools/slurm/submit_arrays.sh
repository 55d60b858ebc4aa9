#!/usr/bin/env bash
# Submits N shards of a tqlab job as Slurm job arrays of ARRAY_SCRIPT and a merge that waits for them:
#
#   tools/slurm/submit_arrays.sh ARRAY_SCRIPT CONFIG OUTDIR N OUT [SBATCH_OPTION...]
#
# What submit_sweep.sh and submit_profile.sh share. The shards go out as job arrays of ARRAY_SCRIPT
# (called as ARRAY_SCRIPT CONFIG OUTDIR N), as many as the cluster's MaxArraySize needs (each with
# its TQLAB_SHARD_OFFSET), then merge.sbatch with --dependency=afterok on all of them. Prints the
# merge job's id. SBATCH_OPTIONS (partition, time, cores) go to every job.
set -euo pipefail
if [ $# -lt 5 ]; then
  echo "usage: $0 ARRAY_SCRIPT CONFIG OUTDIR N OUT [SBATCH_OPTION...]" >&2
  exit 2
fi
script=$1 config=$2 outdir=$3 count=$4 out=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
max=$(scontrol show config 2>/dev/null | awk '$1 == "MaxArraySize" {print $3}')
per_array=$((${max:-1001} - 1))  # task ids run from 1 to MaxArraySize - 1
jobs=()
for ((offset = 0; offset < count; offset += per_array)); do
  size=$((count - offset < per_array ? count - offset : per_array))
  id=$(sbatch --parsable --array=1-"$size" --export=ALL,TQLAB_SHARD_OFFSET="$offset" "$@" \
    "$script" "$config" "$outdir" "$count")
  jobs+=("${id%%;*}")
done
dependency=$(IFS=:; echo "${jobs[*]}")
merge=$(sbatch --parsable --dependency=afterok:"$dependency" "$@" "$here/merge.sbatch" "$outdir" "$count" "$out")
echo "${merge%%;*}"
