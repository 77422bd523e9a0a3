#!/usr/bin/env bash
# The Slurm backend of `hcasim sweep` against a real single-node Slurm cluster on this machine:
# installs slurm-wlm and munge when missing (Debian packages), writes a minimal slurm.conf in a
# temporary folder (one node = this host, proctrack/linuxproc and task/none so no cgroups or
# systemd are needed), starts munged (unless one already answers), slurmctld and slurmd, waits for
# the node to be idle, then runs tests/slurm/sweep.json
#   1. with --backend slurm (waiting on the job array) and
#   2. with --backend slurm --no-wait, then --collect once the job has left the queue,
# and checks that both give the same results.csv as the same sweep run locally. Tears the daemons
# down on exit. Anything missing or broken is a FAILURE, never a skip: CI must really test this.
#
# usage: run_slurm_test.sh HCASIM_BINARY [SOURCE_DIR]
set -euo pipefail

hcasim=$(realpath "${1:?usage: run_slurm_test.sh HCASIM_BINARY [SOURCE_DIR]}")
src=$(realpath "${2:-$(dirname "$0")/../..}")
sweep="$src/tests/slurm/sweep.json"

work=$(mktemp -d /tmp/hcasim-slurm.XXXXXX)
started_pids=()
log() { echo "slurm test: $*" >&2; }
dump_logs() {
    for f in "$work"/log/*.log "$work"/munged.log; do
        [ -s "$f" ] || continue
        echo "----- $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
}
fail() {
    log "FAIL: $*"
    dump_logs
    exit 1
}
teardown() {
    local rc=$?
    set +e
    if [ -n "${SLURM_CONF:-}" ] && command -v scancel >/dev/null; then
        scancel --user="$(id -un)" >/dev/null 2>&1
    fi
    for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${started_pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    done
    if [ "$rc" -eq 0 ]; then rm -rf "$work"; else log "left $work for inspection"; fi
    exit "$rc"
}
trap teardown EXIT

# --- install -----------------------------------------------------------------------------------
packages=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "cannot install ${missing[*]}"; }
fi
[ "$(id -u)" -eq 0 ] || fail "must run as root to start munged, slurmctld and slurmd"
for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd sbatch squeue sinfo scancel; do
    command -v "$b" >/dev/null || fail "$b not found after installing"
done

# --- munge -------------------------------------------------------------------------------------
if ! (munge -n | unmunge) >/dev/null 2>&1; then
    if [ ! -s /etc/munge/munge.key ]; then
        log "creating the munge key"
        if [ -x /usr/sbin/mungekey ]; then
            /usr/sbin/mungekey --create --keyfile=/etc/munge/munge.key --force
        elif command -v create-munge-key >/dev/null; then
            create-munge-key -f
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        fi
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    rm -f /run/munge/munged.pid
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged --foreground >>"$work/munged.log" 2>&1 &
    started_pids+=($!)
    for _ in $(seq 50); do (munge -n | unmunge) >/dev/null 2>&1 && break; sleep 0.1; done
    (munge -n | unmunge) >/dev/null 2>&1 || fail "munged does not answer"
fi

# --- slurm.conf and daemons --------------------------------------------------------------------
node=$(hostname -s)
cpus=$(nproc)
[ "$cpus" -gt 2 ] && cpus=2
mem=$(free -m | awk '/^Mem:/ {print int($2 * 0.9)}')
# Ports of our own, so a cluster left by an earlier run (or a real one) does not answer instead.
port=$((20000 + $$ % 20000))
mkdir -p "$work/state" "$work/spool" "$work/log"
cat >"$work/slurm.conf" <<EOF
ClusterName=hcasimtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MinJobAge=300
# Small, so the 4-point sweep goes out as two arrays (points 0-2, then point 3 as task 0 + 3).
MaxArraySize=3
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=hcasim Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"

log "starting slurmctld and slurmd (node $node, $cpus CPUs, ${mem} MB, port $port)"
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >>"$work/log/slurmctld.log" 2>&1 &
started_pids+=($!)
/usr/sbin/slurmd -D -f "$SLURM_CONF" >>"$work/log/slurmd.log" 2>&1 &
started_pids+=($!)

state=""
for _ in $(seq 120); do
    state=$(sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
    case "$state" in
        idle*) break ;;
        drain* | down*) scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
[[ "$state" == idle* ]] || fail "node $node is not idle after 60 s (state: '${state:-none}'; $(sinfo -h -R 2>&1))"
log "node $node is idle"

# --- the sweep, locally and on the cluster -----------------------------------------------------
"$hcasim" sweep "$sweep" -o "$work/local" -j 2 || fail "local sweep exited $?"
[ "$(wc -l <"$work/local/results.csv")" -eq 5 ] || fail "local results.csv should have a header and 4 rows"

start=$(date +%s)
"$hcasim" sweep "$sweep" --backend slurm --partition hcasim --time 5 -j 2 \
    --sbatch-arg=--comment=hcasim-test -o "$work/slurm" 2>"$work/slurm.err" ||
    fail "slurm sweep exited $?: $(cat "$work/slurm.err")"
[ "$(grep -c "submitted job array" "$work/slurm.err")" -eq 2 ] ||
    fail "MaxArraySize=3 should split the 4 points into two arrays: $(cat "$work/slurm.err")"
grep -q "points = task + 3" "$work/slurm.err" || fail "the second array should offset its tasks by 3"
grep -q "^#SBATCH --comment=hcasim-test" "$work/slurm/slurm/sweep.sbatch" || fail "job script lacks the --sbatch-arg"
log "slurm sweep (waiting) took $(($(date +%s) - start)) s"
grep -q "^#SBATCH --partition=hcasim" "$work/slurm/slurm/sweep.sbatch" || fail "job script lacks --partition"
grep -q "^#SBATCH --time=5" "$work/slurm/slurm/sweep.sbatch" || fail "job script lacks --time"
cmp "$work/local/results.csv" "$work/slurm/results.csv" || {
    diff "$work/local/results.csv" "$work/slurm/results.csv" >&2
    fail "results.csv differs between local and slurm"
}
[ "$(wc -l <"$work/slurm/results.jsonl")" -eq 4 ] || fail "slurm results.jsonl should have 4 rows"
ls "$work"/slurm/slurm/job*_*.log >/dev/null 2>&1 || fail "no array task logs: did the tasks run under Slurm?"

"$hcasim" sweep "$sweep" --backend slurm --no-wait -o "$work/nowait" || fail "--no-wait exited $?"
job=$(paste -sd, "$work/nowait/slurm/job_id")
for _ in $(seq 240); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
    sleep 0.5
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "job $job still queued after 2 minutes"
"$hcasim" sweep "$sweep" --collect -o "$work/nowait" || fail "--collect exited $?"
cmp "$work/local/results.csv" "$work/nowait/results.csv" || {
    diff "$work/local/results.csv" "$work/nowait/results.csv" >&2
    fail "results.csv differs between local and slurm --no-wait + --collect"
}

log "PASS: local, slurm and slurm --no-wait/--collect give the same results.csv"
