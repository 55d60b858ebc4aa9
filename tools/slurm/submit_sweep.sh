#!/usr/bin/env bash
# Submits a tqlab sweep to Slurm as N shards and a merge that waits for them:
#
#   tools/slurm/submit_sweep.sh CONFIG OUTDIR N OUT [SBATCH_OPTION...]
#
# e.g. tools/slurm/submit_sweep.sh configs/bits.json shards 64 results/bits.json --cpus-per-task=4
# The shards go out as job arrays of sweep_array.sbatch, as many as the cluster's MaxArraySize
# needs (each with its TQLAB_SHARD_OFFSET), then merge.sbatch with --dependency=afterok on all of
# them. Prints the merge job's id. SBATCH_OPTIONS (partition, time, cores) go to every job; paths
# are taken as the jobs see them (relative ones from the submitting folder, unless --chdir).
# Running it again resubmits everything: finished shards are kept, killed ones resume.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 CONFIG OUTDIR N OUT [SBATCH_OPTION...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/submit_arrays.sh" "$here/sweep_array.sbatch" "$@"
