#!/bin/sh
# A real Slurm on this machine (Debian's slurm-wlm and munge; slurmctld and slurmd for
# localhost, private ports, state, munge socket and config in a temporary directory), with
# gpuledger-prolog and gpuledger-epilog installed. Two jobs are submitted as user nobody:
#   1. a small real workload, recorded through `record --slurm-job` (no GPU here: host counters
#      and the job's processes);
#   2. a simulated two-GPU DDP job with the peer-mirror pattern (`gpuledger simulate --live`),
#      recorded through the test-only GPULEDGER_SLURM_ROOT setting, so that there are findings.
# Asserts for each: the recording in the spool with its labels (job id, user, node), the summary
# in the job's working directory, and for job 2 the verdict in its AdminComment (set by the
# watcher while the job runs: Slurm 22.05 refuses updates once the job has finished).
# Needs root. Slurm tracks jobs with proctrack/cgroup where slurmd can make cgroups (here: a
# hybrid cgroup v1 host, the freezer hierarchy; cgroup/v2 refuses hybrid mounts), else with
# proctrack/linuxproc; TaskPlugin=task/none either way. The script says which it used.
# Usage: deploy/slurm/ci-test.sh [path/to/gpuledger]   (default: target/debug/gpuledger)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:-$repo/target/debug/gpuledger}

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm ci-test: skipped, needs root (slurmd runs the prolog as root)"
    exit 0
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

T=$(mktemp -d /tmp/gpuledger-slurm.XXXXXX)
chmod 0755 "$T"
mkdir -p "$T/bin" "$T/etc" "$T/state" "$T/slurmd" "$T/spool" "$T/log" "$T/munge" "$T/work" "$T/sim"
cp "$bin" "$T/bin/gpuledger"
chmod 0755 "$T/bin/gpuledger"
chown nobody "$T/work" "$T/sim"
chown munge "$T/munge"

stop() {
    for f in "$T/slurmd.pid" "$T/slurmctld.pid" "$T/munge/munged.pid"; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    sleep 1
    rm -rf "$T"
}
trap stop EXIT

fail() {
    echo "slurm ci-test: FAILED: $*" >&2
    for f in "$T"/log/* "$T"/munge/munged.log; do echo "--- $f" >&2; tail -n 20 "$f" >&2; done
    exit 1
}

# munge: a key of this test's own, and a socket that no system munged uses.
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chown munge "$T/munge/munge.key"
chmod 0400 "$T/munge/munge.key"
runuser -u munge -- munged --key-file="$T/munge/munge.key" --socket="$T/munge/socket" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" \
    || fail "munged did not start"

node=$(uname -n)
# The shipped prolog.d/epilog.d scripts, pointed at this checkout's gpuledger-slurm and config.
for kind in prolog epilog; do
    cat >"$T/etc/$kind" <<EOF
#!/bin/sh
GPULEDGER_SLURM=$here/gpuledger-slurm GPULEDGER_SLURM_CONFIG=$T/etc/gpuledger-slurm
export GPULEDGER_SLURM GPULEDGER_SLURM_CONFIG
exec $here/$kind.d/gpuledger
EOF
    chmod 0755 "$T/etc/$kind"
done
export SLURM_CONF="$T/etc/slurm.conf"
# $1: the ProctrackType; $2: cgroup.conf's lines, for proctrack/cgroup.
write_conf() {
    cat >"$SLURM_CONF" <<EOF
ClusterName=gpuledger-ci
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$T/munge/socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/slurmd
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=$1
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PrologFlags=Alloc
Prolog=$T/etc/prolog
Epilog=$T/etc/epilog
MinJobAge=3600
ReturnToService=2
MailProg=/bin/true
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    printf '%s\n' "${2:-}" >"$T/etc/cgroup.conf"
}
gl_config() {
    cat >"$T/etc/gpuledger-slurm" <<EOF
GPULEDGER=$T/bin/gpuledger
GPULEDGER_SPOOL=$T/spool
GPULEDGER_INTERVAL=200ms
GPULEDGER_VERDICT_EVERY=1
$1
EOF
}
gl_config ""

stop_daemons() {
    for f in "$T/slurmd.pid" "$T/slurmctld.pid"; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        rm -f "$f"
    done
}

# Starts slurmctld and slurmd and waits for the node to be idle; stops them and fails otherwise.
start_slurm() {
    if slurmctld -c && slurmd -N "$node"; then
        i=0
        until sinfo -h -o %t 2>/dev/null | grep -qx idle; do
            i=$((i + 1))
            [ "$i" -lt 40 ] || break
            sleep 0.5
        done
        sinfo -h -o %t 2>/dev/null | grep -qx idle && return 0
    fi
    stop_daemons
    return 1
}

# Slurm tracks the job in a cgroup where slurmd can make one (cgroup/v2 needs a pure cgroup2
# /sys/fs/cgroup, cgroup/v1 the freezer hierarchy), else by process tree (linuxproc).
if grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts; then
    cgroup_conf=$(printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes')
else
    cgroup_conf=CgroupPlugin=cgroup/v1
fi
mode="proctrack/cgroup, $cgroup_conf"
write_conf proctrack/cgroup "$cgroup_conf"
if ! start_slurm; then
    mode=proctrack/linuxproc
    write_conf proctrack/linuxproc
    start_slurm || fail "slurmctld and slurmd did not start"
fi
echo "slurm ci-test: Slurm tracks jobs with $mode"

# Submits a job as nobody from $T/work and waits until it and its epilog are done.
run_job() {
    id=$(cd "$T/work" && runuser -u nobody -- sbatch --parsable -p ci -o "$T/work/slurm-%j.out" --wrap "$1") ||
        fail "sbatch"
    i=0
    until scontrol show job "$id" | grep -q 'JobState=COMPLETED\|JobState=FAILED'; do
        i=$((i + 1))
        [ "$i" -lt 240 ] || fail "job $id did not finish: $(scontrol show job "$id")"
        sleep 0.25
    done
    scontrol show job "$id" | grep -q 'JobState=COMPLETED' || fail "job $id failed: $(cat "$T/work/slurm-$id.out")"
    echo "$id"
}

check_recording() {
    id=$1
    ledger=$T/spool/$id.ledger
    [ -f "$ledger" ] || fail "no recording $ledger; recorder log: $(cat "$T/spool/$id.log" 2>&1)"
    shown=$("$T/bin/gpuledger" show "$ledger") || fail "gpuledger show $ledger"
    # The labels as KEY=VALUE lines from the JSON (the text is for people).
    labels=$("$T/bin/gpuledger" show --json "$ledger" |
        python3 -c 'import json, sys; [print(f"{k}={v}") for k, v in json.load(sys.stdin)["labels"].items()]') ||
        fail "gpuledger show --json $ledger"
    for label in "slurm_job=$id" "user=nobody" "node=$node"; do
        echo "$labels" | grep -qx "$label" || fail "job $id: no label $label in: $labels"
    done
    summary=$T/work/gpuledger-$id.txt
    [ -f "$summary" ] || fail "job $id: no summary $summary"
    [ "$(stat -c %U "$summary")" = nobody ] || fail "job $id: the summary is not the user's"
    grep -q "slurm_job=$id" "$summary" || fail "job $id: the summary lacks the labels"
    echo "job $id: $(echo "$labels" | tr '\n' ' ')"
}

# Long enough (about 4 s) for the prolog's recorder to find the job's cgroup on a loaded machine.
job=$(run_job 'for i in 1 2 3 4; do head -c 20000000 /dev/zero | sha256sum >/dev/null; sleep 1; done')
check_recording "$job"
case $mode in
    proctrack/cgroup*) grep -q "followed=/sys/fs/cgroup/.*/job_$job" "$T/work/gpuledger-$job.txt" ||
        fail "job $job: not followed through its cgroup: $(grep labels "$T/work/gpuledger-$job.txt")" ;;
esac
grep -q 'steps *batch\|slurm_steps=batch' "$T/work/gpuledger-$job.txt" ||
    fail "job $job: the batch step is not in the labels: $(cat "$T/work/gpuledger-$job.txt")"

gl_config "GPULEDGER_SLURM_ROOT=$T/sim"
# 6 s: on a loaded machine the prolog's recorder can take seconds to start; a job that ends
# before it has created its file leaves no recording.
job=$(run_job "$T/bin/gpuledger simulate ddp-peer-mirror -o $T/sim --force --live 6s")
check_recording "$job"
grep -q 'CRITICAL  peer_mirror' "$T/work/gpuledger-$job.txt" || fail "job $job: no peer_mirror in the summary"
comment=$(scontrol show job "$job" | sed -n 's/^ *AdminComment=//p')
case $comment in
    "gpuledger: CRITICAL peer_mirror at "*"(backing pinned): rank "*) echo "job $job: AdminComment=$comment" ;;
    *) fail "job $job: AdminComment is '$comment'" ;;
esac
echo "slurm ci-test: passed"
