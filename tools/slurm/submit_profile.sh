#!/usr/bin/env bash
# Submits the profile of a tqlab allocate to Slurm as N shards and a merge that waits for them:
#
#   tools/slurm/submit_profile.sh CONFIG OUTDIR N PROFILE [SBATCH_OPTION...]
#
# e.g. TQLAB_ALLOCATE_OPTIONS="--granularity layer" tools/slurm/submit_profile.sh configs/alloc.json \
#        parts 32 profile.json --cpus-per-task=4
# then:  tqlab allocate --config configs/alloc.json --granularity layer --budget 3.25 \
#        --profile-file profile.json -o alloc.json
# The shards are job arrays of profile_array.sbatch (tqlab allocate --shard K/N, with the options in
# TQLAB_ALLOCATE_OPTIONS: the same ones the solving allocate takes), the merge is merge.sbatch
# (tqlab merge writes the tqlab.profile/1 profile). Prints the merge job's id. Running it again
# resubmits everything: finished shards are kept.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 CONFIG OUTDIR N PROFILE [SBATCH_OPTION...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/submit_arrays.sh" "$here/profile_array.sbatch" "$@"
