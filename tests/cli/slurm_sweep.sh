# A sweep on a real Slurm: a throwaway single-node cluster (munged, slurmctld and slurmd in the
# foreground, everything in one temporary folder, random ports) runs tools/slurm/submit_sweep.sh:
# the shards as job arrays (MaxArraySize=3 forces two arrays, the second with TQLAB_SHARD_OFFSET=2)
# and the merge job after them (--dependency=afterok). The merged document must be the unsharded
# sweep's, byte for byte outside "timing". Then tools/slurm/submit_profile.sh does the same for an
# allocation profile (tqlab allocate --shard K/N), merged into the unsharded profile. Every daemon is stopped by its PID when the test ends,
# failing or not; when they cannot start the test fails with their logs (it does not skip).
source "$(dirname "$0")/lib.sh" "$@"
repo=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf -- *.safetensors *.json *.txt *.log shards parts whole

for tool in munged mungekey slurmctld slurmd sbatch squeue sinfo scancel scontrol; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing: run tools/install_deps.sh (slurm-wlm, munge)"; exit 1; }
done
user=$(id -un)
cluster=$(mktemp -d "${TMPDIR:-/tmp}/tqlab-slurm.XXXXXX")
# munged refuses a socket whose folders others cannot enter (mktemp makes 0700); the key stays 0600.
chmod 755 "$cluster"
mkdir -p "$cluster/munge" "$cluster/state" "$cluster/spool" "$cluster/log" "$cluster/jobs"
chmod 755 "$cluster/munge"
export SLURM_CONF=$cluster/slurm.conf
daemons=()  # PIDs, oldest first

logs() {
  local log
  for log in "$cluster"/log/*; do
    echo "---- $log" >&2
    tail -n 20 "$log" >&2
  done
}

# Processes our cluster started that no daemon waits for any more (job steps, slurmstepd): they
# inherit this test's SLURM_CONF. This shell and its subshells have it too.
strays() {
  local proc
  for proc in /proc/[0-9]*; do
    case "${proc#/proc/}" in $$ | $BASHPID) continue ;; esac
    { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" && echo "${proc#/proc/}"
  done
}

stop_cluster() {
  local pid i
  [ -f "$SLURM_CONF" ] && timeout 5 scancel -u "$user" 2>/dev/null
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do kill -TERM "${daemons[i]}" 2>/dev/null; done
  for _ in $(seq 50); do
    pid=""
    for i in "${daemons[@]}"; do kill -0 "$i" 2>/dev/null && pid=$i; done
    [ -z "$pid" ] && break
    sleep 0.1
  done
  for i in "${daemons[@]}"; do kill -KILL "$i" 2>/dev/null; done
  wait 2>/dev/null
  for pid in $(strays); do kill -KILL "$pid" 2>/dev/null; done
  rm -rf -- "$cluster"
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_cluster() {
  local attempt port state
  mungekey -c -k "$cluster/munge/munge.key" >"$cluster/log/mungekey.log" 2>&1 || { logs; return 1; }
  munged -F -S "$cluster/munge/socket" --key-file="$cluster/munge/munge.key" \
    --pid-file="$cluster/munge/munged.pid" --seed-file="$cluster/munge/seed" \
    --log-file="$cluster/log/munged.log" >"$cluster/log/munged.out" 2>&1 &
  daemons+=($!)
  : >"$cluster/plugstack.conf"
  for attempt in 1 2 3; do  # a port another program holds: try others
    port=$((20000 + RANDOM % 12000))
    cat >"$SLURM_CONF" <<CONF
ClusterName=tqlab-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster/munge/socket
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
PlugStackConfig=$cluster/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
ReturnToService=2
MinJobAge=5
MaxArraySize=3
SchedulerParameters=batch_sched_delay=0
NodeName=tqlab-node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=500 State=UNKNOWN
PartitionName=tqlab Nodes=tqlab-node Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -D >>"$cluster/log/slurmctld.out" 2>&1 &
    daemons+=($!)
    slurmd -D -N tqlab-node >>"$cluster/log/slurmd.out" 2>&1 &
    daemons+=($!)
    for _ in $(seq 50); do
      state=$(sinfo -h -N -o %t 2>/dev/null)
      [ "$state" = idle ] && return 0
      kill -0 "${daemons[-1]}" 2>/dev/null && kill -0 "${daemons[-2]}" 2>/dev/null || break
      sleep 0.2
    done
    kill -TERM "${daemons[-1]}" "${daemons[-2]}" 2>/dev/null
    wait "${daemons[-1]}" "${daemons[-2]}" 2>/dev/null
    unset 'daemons[-1]' 'daemons[-2]'
  done
  echo "FAIL: the single-node Slurm did not come up (node state '${state:-none}'); daemon logs:" >&2
  logs
  return 1
}

start=$SECONDS
# wait_gone JOB: until the job has left the queue (with a small MinJobAge a finished job leaves it: gone
# means done); fails when it can never run.
wait_gone() {
  local queue
  for _ in $(seq 600); do
    if queue=$(squeue -h -j "$1" -o %r 2>&1); then
      [ -z "$queue" ] && return 0
      if [ "$queue" = DependencyNeverSatisfied ]; then
        fail "a shard job failed, so the merge job never runs; the jobs' output:"
        tail -n 5 "$cluster"/jobs/*.log >&2
        return 1
      fi
    elif grep -q "Invalid job id" <<<"$queue"; then
      return 0
    fi
    sleep 0.1
  done
}

start_cluster || exit 1
up=$SECONDS

expect_exit 0 "synth" -- "$TQLAB" synth -o kv.safetensors --layers 3 --kv-heads 2 --q-heads 4 --tokens 64 --dim 32
cat >config.json <<'JSON'
{"name": "slurm", "data": {"path": "kv.safetensors"},
 "grid": {"k": ["tq:b=3", "q4_0"], "v": ["tq:b=3"], "window": [0, 8]},
 "metrics": {"attention": {"chunk": 32}, "needle": {"trials": 8, "synth_trials": 1}}, "seeds": [0, 1]}
JSON
expect_exit 0 "unsharded sweep" -- "$TQLAB" sweep --config config.json --out merged-ref.json --quiet

# Four shards; MaxArraySize=3 allows task ids 1-2 (sbatch refuses --array=1-4), so shards 3 and 4
# exist only if the second array's TQLAB_SHARD_OFFSET=2 worked.
checks=$((checks + 1))
merge_job=$(TQLAB=$TQLAB bash "$repo/tools/slurm/submit_sweep.sh" "$PWD/config.json" "$PWD/shards" 4 \
  "$PWD/merged.json" --chdir="$cluster/jobs" 2>err.txt)
[ -n "$merge_job" ] || { fail "submit_sweep.sh submitted nothing: $(cat err.txt)"; logs; exit 1; }
wait_gone "$merge_job" || exit 1
[ -f merged.json ] || { fail "the merge job wrote no merged.json"; cat "$cluster"/jobs/*.log >&2; logs; exit 1; }
for k in 1 2 3 4; do [ -f "shards/shard-$k-of-4.json" ] || fail "shard $k/4 is missing"; done
expect_exit 0 "merged equals unsharded" -- "$TQLAB" diff merged-ref.json merged.json --rtol 0 --atol 0
same_outside_timing merged-ref.json merged.json || fail "merged.json differs from the unsharded document outside timing"
ls shards/*.journal shards/*.tmp-* >/dev/null 2>&1 && fail "the shards left journals or temporaries: $(ls shards)"
echo "slurm: cluster up in $((up - start)) s, 4 shards and the merge in $((SECONDS - up)) s"

# An allocation profile in 3 shards (two arrays again), merged into the profile an unsharded
# allocate caches, then solved by allocate --profile-file.
options="--candidates tq:b=2,tq:b=4 --seeds 0"
mkdir -p whole
expect_exit 0 "unsharded profile" -- "$TQLAB" allocate --config "$PWD/config.json" --budget 3 $options \
  --cache-dir whole -o alloc-ref.json --quiet
checks=$((checks + 1))
profile_job=$(TQLAB=$TQLAB TQLAB_ALLOCATE_OPTIONS=$options bash "$repo/tools/slurm/submit_profile.sh" \
  "$PWD/config.json" "$PWD/parts" 3 "$PWD/profile.json" --chdir="$cluster/jobs" 2>err.txt)
[ -n "$profile_job" ] || { fail "submit_profile.sh submitted nothing: $(cat err.txt)"; logs; exit 1; }
wait_gone "$profile_job" || exit 1
[ -f profile.json ] || { fail "the merge job wrote no profile.json"; cat "$cluster"/jobs/*.log >&2; exit 1; }
for k in 1 2 3; do [ -f "parts/shard-$k-of-3.json" ] || fail "profile shard $k/3 is missing"; done
"$python" - whole/tqlab-profile-offline-*.json profile.json <<'PY' || fail "the merged profile is not the unsharded one"
import re, sys
a, b = (re.sub(rb'\n *"seconds": [^\n]*\n', b"\n", open(p, "rb").read()) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY
expect_exit 0 "allocate --profile-file" -- "$TQLAB" allocate --config "$PWD/config.json" --budget 3 $options \
  --profile-file profile.json -o alloc.json --quiet
grep -q '"hit": true' alloc.json || fail "allocate --profile-file did not read the merged profile"

finish
