#!/usr/bin/env bash
# The documented cluster path tested for real: starts a private single-node Slurm cluster (munged,
# slurmctld and slurmd on this machine, on free ports, all state in a temporary directory), runs
# a small sweep as a job array of 3 shards plus the merge job (scripts/sweep_slurm.sh), and checks
# that the merged results equal a one-process sweep. Stops every daemon it started.
#
# Usage: scripts/test_slurm_sweep.sh SPECDEC_BINARY
# Exit 0 pass, 1 fail, 77 skipped (no binary at the path given; Slurm or munge not installed:
# scripts/setup.sh installs them; or not root, which this private cluster needs to start slurmd).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ -x "${1:?usage: scripts/test_slurm_sweep.sh SPECDEC_BINARY}" ] || {
  # A build of some targets only (scripts/sanitize.sh in CI) registers this test without the binary.
  echo "SKIP: no specdec binary at $1 (this build did not build the specdec target)"
  exit 77
}
specdec=$(realpath "$1")
for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" > /dev/null || { echo "SKIP: $tool not installed (scripts/setup.sh installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the private Slurm cluster needs root (slurmd starts jobs as their user)"; exit 77; }

t=$(mktemp -d /tmp/specdec-slurm.XXXXXX)
chmod 700 "$t"
stop() {
  for d in slurmd slurmctld munged; do
    [ -f "$t/$d.pid" ] && kill "$(cat "$t/$d.pid")" 2> /dev/null || true
  done
  sleep 1
  rm -rf "$t"
}
trap stop EXIT
fail() {
  echo "FAIL: $*"
  for log in "$t"/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
}

# munge, with its own key and socket.
dd if=/dev/urandom of="$t/munge.key" bs=1024 count=1 status=none
chmod 400 "$t/munge.key"
munged --force --socket="$t/munge.sock" --key-file="$t/munge.key" --pid-file="$t/munged.pid" \
  --log-file="$t/munged.log" --seed-file="$t/munged.seed" || fail "munged did not start"

ports=$(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r ctld_port d_port <<< "$ports"
host=$(hostname -s)
node=$(slurmd -C | head -n 1)
mkdir -p "$t/state" "$t/spool"
cat > "$t/slurm.conf" << CONF
ClusterName=specdec-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$t/munge.sock
CredType=cred/munge
StateSaveLocation=$t/state
SlurmdSpoolDir=$t/spool
SlurmctldPidFile=$t/slurmctld.pid
SlurmdPidFile=$t/slurmd.pid
SlurmctldLogFile=$t/slurmctld.log
SlurmdLogFile=$t/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
$node State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$t/slurm.conf
slurmctld -c -f "$t/slurm.conf" || fail "slurmctld did not start"
slurmd -f "$t/slurm.conf" || fail "slurmd did not start"
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %T 2> /dev/null || true)
  case "$state" in idle* | mix*) break ;; esac
  sleep 1
done
case "$state" in idle* | mix*) ;; *) fail "the node did not come up (state '$state')" ;; esac
echo "slurm: single-node cluster up ($host, $(sinfo -h -o '%c CPUs'))"

# A small sweep: 4 cells on 3 short prompts, 12 runs.
cat > "$t/questions.jsonl" << 'Q'
{"question_id": "p1", "category": "prose", "turns": ["And God said, Let there be"]}
{"question_id": "c1", "category": "code", "turns": ["def main():\n    "]}
{"question_id": "p2", "category": "prose", "turns": ["In the beginning"]}
Q
cat > "$t/spec.json" << SPEC
{"model": "$root/models/target", "prompts": {"file": "$t/questions.jsonl"}, "max_new_tokens": 8,
 "drafters": {"draft": "$root/models/draft", "eagle": "$root/models/eagle1"},
 "grid": [{"method": "sequential"}, {"method": "eagle", "k": [1, 3]}, {"method": "draft", "k": 2, "sampling": "sample", "temperature": 0.8, "seed": 4}]}
SPEC
cd "$t"
SPECDEC=$specdec "$root/scripts/sweep_slurm.sh" --wait "$t/spec.json" "$t/slurm/results" 3 --time=10 \
  || fail "the job array or its merge failed"
"$specdec" sweep "$t/spec.json" --out "$t/single" > "$t/single.log" || fail "the one-process sweep failed"
/usr/bin/python3 - "$t/slurm/results" "$t/single" << 'PY' || fail "merged results differ from the one-process sweep"
import json, sys
def rows(d):
    out = []
    for line in open(f"{d}/rows.jsonl"):
        r = json.loads(line)
        r.pop("timing")  # wall times are measured, not computed
        out.append(r)
    return out
merged, single = rows(sys.argv[1]), rows(sys.argv[2])
assert len(merged) == 12, f"{len(merged)} merged rows, expected 12"
assert merged == single, "rows differ"
assert json.load(open(f"{sys.argv[1]}/manifest.json")) == json.load(open(f"{sys.argv[2]}/manifest.json")), "manifests differ"
print("merged rows of the job array equal the one-process sweep (12 runs, 3 shards)")
PY
for i in 1 2 3; do
  [ -s "$t/slurm/results-shard$i/rows.jsonl" ] || fail "shard $i wrote no rows"
done
echo "PASS: Slurm job array of 3 shards and a merge job"
