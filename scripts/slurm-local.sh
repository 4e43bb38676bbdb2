#!/usr/bin/env bash
# A single-node Slurm on this machine, to try `snakemake --profile slurm` without a cluster
# (and to test it in CI against real Slurm daemons, not a mock).
#
#   bash scripts/slurm-local.sh start    install if missing, configure, start, wait until idle
#   bash scripts/slurm-local.sh status   what runs; exit 0 if the node answers
#   bash scripts/slurm-local.sh stop     cancel our jobs, stop the daemons by their recorded pids
#
# Needs root (slurmd starts jobs as their users) and Debian's packages slurmctld, slurmd,
# slurm-client and munge (Slurm 22.05 on Debian 12), which `start` installs with apt-get when
# they are missing. No systemd: the daemons are started by hand.
#
# Everything lives in .slurm-local/ at the repository root (git-ignored): slurm.conf, the
# daemons' logs, pid files and state. The system's Slurm configuration (/etc/slurm) is
# neither read nor changed, and the daemons listen on their own ports, so an existing Slurm
# on the machine is left alone. The Slurm commands find this cluster through SLURM_CONF;
# .slurm-local/bin/ holds wrappers of them (srun, sbatch, squeue, ...) that set it, because
# the executor plugin's job step removes every SLURM_* variable, SLURM_CONF included, from
# the environment of the srun it starts inside a job. `start` and `status` print the line that
# sets both, alone on stdout, so
#
#   eval "$(bash scripts/slurm-local.sh start)"
#
# starts the cluster and points this shell at it. Messages go to stderr.
#
# Environment:
#   APMT_SLURM_STATE=DIR          the state folder (default: .slurm-local; relative to the
#                                 repository root)
#   APMT_SLURM_PORT=N             slurmctld's port; slurmd takes N+1 (default 6917, not 6817:
#                                 a system Slurm may hold the standard ports)
#   APMT_SLURM_START_TIMEOUT=S    seconds to wait for the node to become idle (default 60)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd -P)"
STATE="${APMT_SLURM_STATE:-$ROOT/.slurm-local}"
[[ "$STATE" == /* ]] || STATE="$ROOT/$STATE"
CONF="$STATE/slurm.conf"
BIN="$STATE/bin"
PORT="${APMT_SLURM_PORT:-6917}"
START_TIMEOUT="${APMT_SLURM_START_TIMEOUT:-60}"
PACKAGES=(slurmctld slurmd slurm-client munge)
NODE=localhost
MUNGE_SOCKET_DIR=/run/munge
MUNGE_LOG=/var/log/munge/munged.log
export SLURM_CONF="$CONF"

say() { printf '[slurm-local] %s\n' "$*" >&2; }
fail() { printf '[slurm-local] ERROR: %s\n' "$*" >&2; exit 1; }
# "$PATH" stays literal: the shell that evaluates the line expands it
# shellcheck disable=SC2016
export_line() { printf 'export SLURM_CONF=%q PATH=%q:"$PATH"\n' "$CONF" "$BIN"; }

# alive NAME: the process whose pid is recorded in $STATE/NAME.pid runs and is NAME
# (a pid file left by a crash may name a pid the system has since given to another program).
alive() {
    local pid
    pid="$(cat "$STATE/$1.pid" 2>/dev/null)" || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$1" ]]
}

# The slurmd spool holds one UNIX socket per job step, and such paths may not exceed 107
# bytes: a deep repository gets a short spool folder under /tmp instead.
spool_dir() {
    if ((${#STATE} <= 60)); then
        printf '%s/slurmd-spool' "$STATE"
    else
        printf '/tmp/apmt-slurmd-%s' "$(printf '%s' "$STATE" | sha256sum | cut -c1-12)"
    fi
}

install_packages() {
    local missing=() package
    for package in "${PACKAGES[@]}"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    ((${#missing[@]} == 0)) && return
    say "installing Debian packages: ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}" >&2
}

# slurm.conf for one node called localhost, with what this machine has. Written on every
# start, so that a changed machine (CPUs, memory) or an edit here takes effect.
write_config() {
    local cpus memory mpi spool
    cpus="$(nproc)"
    # slurmd -C reports the node as slurmd sees it; RealMemory may not exceed it, or the
    # node is refused ("Low RealMemory").
    memory="$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')"
    [[ -n "$memory" ]] || fail "slurmd -C did not report the memory of this machine"
    spool="$(spool_dir)"
    mkdir -p "$STATE/ctld-state" "$spool"
    mpi=none
    write_config_with "$cpus" "$memory" "$spool" "$mpi"
    # srun --mpi=pmix is what Open MPI (and MPICH built with PMIx) need to start their ranks
    # under srun; make it the default when Slurm has the plugin, so rules can say plain srun.
    if srun --mpi=list 2>&1 | grep -qw pmix; then
        mpi=pmix
        write_config_with "$cpus" "$memory" "$spool" "$mpi"
    fi
    say "wrote $CONF: node $NODE, $cpus CPUs, ${memory} MB, MpiDefault=$mpi"
    write_wrappers
}

# One wrapper per Slurm command in $BIN: the command with SLURM_CONF pointing here, whatever
# the environment says (see the top of this file for why).
write_wrappers() {
    local command path
    mkdir -p "$BIN"
    for command in sacct sacctmgr salloc sattach sbatch sbcast scancel scontrol sdiag sinfo \
        sprio squeue sreport srun sshare sstat strigger; do
        path="$(PATH=/usr/bin:/bin:/usr/sbin:/sbin command -v "$command")" || continue
        printf '#!/bin/sh\n# %s of the local Slurm (written by scripts/slurm-local.sh)\nSLURM_CONF=%q exec %q "$@"\n' \
            "$command" "$CONF" "$path" > "$BIN/$command"
        chmod +x "$BIN/$command"
    done
}

write_config_with() {
    local cpus="$1" memory="$2" spool="$3" mpi="$4"
    cat > "$CONF" <<EOF
# Written by scripts/slurm-local.sh: a single-node Slurm on this machine, for trying and
# testing the workflow's Slurm profile. Rewritten on every start; edit the script instead.
ClusterName=apmtlocal
SlurmctldHost=$NODE
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
# State, pid files and logs stay in the state folder: /etc/slurm and /var are left alone.
StateSaveLocation=$STATE/ctld-state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
# No cgroups and no systemd here: track job processes through /proc, bind tasks to CPUs
# with sched_setaffinity, and gather no per-job accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
# Allocate single CPUs and memory, so that several small jobs share the node.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
# No slurmdbd: sacct has nothing to read, so the workflow's profile asks squeue instead,
# which sees a finished job for MinJobAge seconds.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=300
# A job cancelled or over its time limit gets SIGKILL 5 s after SIGTERM (default 30 s).
KillWait=5
# A node that was down (e.g. slurmd restarted) comes back as soon as it registers.
ReturnToService=2
MpiDefault=$mpi
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
# DefMemPerCPU: a job that asks for no memory gets its share per CPU, not the whole node
# (which would make every other job wait).
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP DefMemPerCPU=$((memory / cpus))
EOF
}

# munged authenticates every Slurm message. A munged that already answers (the system's)
# is used as it is and left running on stop; otherwise start one as the munge user.
start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        say "munged: already running, using it"
        return
    fi
    install -d -o munge -g munge -m 0755 "$MUNGE_SOCKET_DIR"
    # a pid file left by a munged that is gone makes the new one refuse to start
    rm -f "$MUNGE_SOCKET_DIR/munged.pid"
    runuser -u munge -- /usr/sbin/munged
    local waited=0
    until munge -n 2>/dev/null | unmunge >/dev/null 2>&1; do
        ((waited++ < 50)) || fail "munged did not start; last lines of $MUNGE_LOG:
$(tail -n 20 "$MUNGE_LOG" 2>&1)"
        sleep 0.1
    done
    cp "$MUNGE_SOCKET_DIR/munged.pid" "$STATE/munged.pid"
    say "munged: started (pid $(cat "$STATE/munged.pid"))"
}

# wait_for_pid_file NAME: the daemons fork before they write their pid file.
wait_for_pid_file() {
    local waited=0
    until alive "$1"; do
        ((waited++ < 100)) || { show_logs; fail "$1 did not start (no live pid in $STATE/$1.pid)"; }
        sleep 0.1
    done
    say "$1: started (pid $(cat "$STATE/$1.pid"))"
}

show_logs() {
    local log
    for log in "$STATE/slurmctld.log" "$STATE/slurmd.log" "$MUNGE_LOG"; do
        [[ -f "$log" ]] || continue
        printf '[slurm-local] --- last lines of %s\n' "$log" >&2
        tail -n 15 "$log" >&2
    done
}

node_state() { sinfo --noheader --nodes="$NODE" --format=%T 2>/dev/null | head -n 1; }

start() {
    [[ "$(id -u)" -eq 0 ]] || fail "start needs root (slurmd runs jobs as their users).
  On a machine where you are not root, use your cluster's Slurm instead."
    if alive slurmctld && alive slurmd && [[ "$(node_state)" =~ ^(idle|mixed|allocated) ]]; then
        say "already running: node $NODE is $(node_state)"
        export_line
        return
    fi
    stop_daemons quiet
    local started=$SECONDS
    install_packages
    write_config
    start_munge
    # -c: start from a clean state, without jobs or node states of an earlier run
    slurmctld -c -f "$CONF"
    wait_for_pid_file slurmctld
    # -N: the node's name in slurm.conf; this machine's host name is something else
    slurmd -N "$NODE" -f "$CONF"
    wait_for_pid_file slurmd
    local state
    until [[ "$(node_state)" == idle ]]; do
        state="$(node_state)"
        if ((SECONDS - started > START_TIMEOUT)); then
            show_logs
            stop_daemons quiet
            fail "node $NODE not idle after ${START_TIMEOUT} s (state: ${state:-no answer});
  the daemons' logs are in $STATE/ (last lines above). The daemons were stopped."
        fi
        sleep 0.2
    done
    say "node $NODE idle after $((SECONDS - started)) s; sinfo:"
    sinfo >&2
    say "point the Slurm commands (and snakemake --profile slurm) at this cluster with:"
    export_line
}

# stop_pid NAME: SIGTERM, up to 10 s, then SIGKILL; the pid file goes in any case.
stop_pid() {
    local name="$1" pid waited=0
    if alive "$name"; then
        pid="$(cat "$STATE/$name.pid")"
        kill -TERM "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null && ((waited++ < 100)); do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "$name: stopped (pid $pid)"
    fi
    rm -f "$STATE/$name.pid"
}

stop_daemons() {
    if alive slurmctld; then
        # jobs of this cluster only (SLURM_CONF points at it); give them KillWait to end
        scancel --user="$(id -un)" 2>/dev/null || true
        local waited=0
        while [[ -n "$(squeue --noheader --states=RUNNING,COMPLETING 2>/dev/null)" ]] \
            && ((waited++ < 40)); do
            sleep 0.25
        done
    fi
    stop_pid slurmd
    stop_pid slurmctld
    if [[ -f "$STATE/munged.pid" ]]; then
        stop_pid munged
        # munged leaves its own pid file when killed; a stale one breaks a later start or
        # the package scripts of apt-get remove
        rm -f "$MUNGE_SOCKET_DIR/munged.pid"
    fi
    [[ "${1:-}" == quiet ]] || say "stopped"
}

status() {
    local name code=0
    for name in munged slurmctld slurmd; do
        if alive "$name"; then
            say "$name: running (pid $(cat "$STATE/$name.pid"))"
        elif [[ "$name" == munged ]] && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
            say "munged: running (not started by this script)"
        else
            say "$name: not running"
            code=1
        fi
    done
    if ((code == 0)); then
        say "node $NODE: $(node_state)"
        [[ "$(node_state)" =~ ^(idle|mixed|allocated) ]] || code=1
        export_line
    fi
    return "$code"
}

case "${1:-}" in
    start) start ;;
    stop) stop_daemons ;;
    status) status ;;
    *) fail "usage: bash scripts/slurm-local.sh start|stop|status" ;;
esac
