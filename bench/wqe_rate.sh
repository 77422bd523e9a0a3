#!/usr/bin/env bash
# Simulation speed of hcasim: simulated WQEs per wall-clock second and kernel events per WQE.
#
# Generates three ib_write_bw scenarios in a temporary folder (64 B on 1 QP: per-WQE overhead;
# 4 KiB on 16 QPs: many QPs and multi-TLP payloads; 64 B on 4,096 QPs: more QPs than the QPC
# cache holds, a context miss on most WQEs), runs each with build/hcasim, and reads
# stats.json: `wall_time_s` and `events` of the run, `iters`, `qps`, `events` and
# `events_per_op` of the workload, and the process's CPU time (user + system, from bash's `time`),
# which other load on the machine disturbs less than wall time. Prints one row per scenario.
#
# usage: bench/wqe_rate.sh [-n REPEATS] [-s SCALE] [-i] [-u] [-t] [-p]
#        bench/wqe_rate.sh -w DIR [-s SCALE]
#   -n REPEATS  runs per scenario; the fastest is reported (default 3)
#   -s SCALE    multiply the iteration counts (default 1: about 1-3 s of wall time each on a
#               2-core Xeon)
#   -i          also count instructions per WQE with valgrind's callgrind (exact and unaffected
#               by other load): 2,000 WQEs (at least 5 per QP) and 1 WQE per QP of each case,
#               the difference over the WQEs in between, so setup is not counted (needs
#               valgrind; ~2 min)
#   -u          -i, and those instructions per WQE by unit (source file; bench/cg_units.py)
#   -t          also count instructions per extra TLP with callgrind: 1,000 WQEs of 16 KiB
#               against 1,000 of 4 KiB on one QP, the difference in instructions over the
#               difference in TLPs on both nodes' PCIe links (needs valgrind; ~1 min)
#   -p          also the perftest tests whose host threads wait for each other, 64 B on one QP:
#               ib_write_lat and ib_send_lat (per iteration: a round trip, two messages) and
#               ib_send_bw (per WQE): CPU time and kernel events, and with -i instructions
#               (callgrind, 2,000 less 1)
#   -w DIR      only write the three scenarios into DIR (as NAME.json) and exit: what
#               bench/ab_cpu.sh runs by default
# Environment: HCASIM (default: build/hcasim next to this folder), KEEP=1 keeps the temp folder.
# Needs: bash, python3 (to read stats.json).
set -euo pipefail
called_from="$PWD"
cd "$(dirname "$0")/.."

repeats=3
scale=1
instructions=0
units=0
tlps=0
perf=0
write_to=""
while getopts "n:s:iutpw:h" opt; do
    case "$opt" in
        n) repeats="$OPTARG" ;;
        s) scale="$OPTARG" ;;
        i) instructions=1 ;;
        u) units=1; instructions=1 ;;
        t) tlps=1 ;;
        p) perf=1 ;;
        w) write_to="$OPTARG" ;;
        *) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

# name size qps iters (iters per QP)
cases=(
    "write_bw_64B_1qp 64 1 $((200000 * scale))"
    "write_bw_4KiB_16qp 4096 16 $((8000 * scale))"
    "write_bw_64B_4096qp 64 4096 $((50 * scale))"
)

# Writes an ib_write_bw scenario: scenario FILE NAME SIZE QPS ITERS (iterations per QP).
scenario() {
    cat >"$1" <<EOF
{
  "name": "$2",
  "description": "bench/wqe_rate.sh: ib_write_bw, $3 B, $4 QP(s), $5 iterations per QP",
  "seed": 1,
  "workloads": [
    {"type": "ib_write_bw", "client": "a", "server": "b", "size": $3, "qps": $4, "iters": $5}
  ],
  "expect": [{"stat": "workloads.0.data_check", "eq": "ok"}]
}
EOF
}

if [ -n "$write_to" ]; then
    case "$write_to" in /*) ;; *) write_to="$called_from/$write_to" ;; esac
    mkdir -p "$write_to"
    for c in "${cases[@]}"; do
        read -r name size qps iters <<<"$c"
        scenario "$write_to/$name.json" "$name" "$size" "$qps" "$iters"
    done
    exit 0
fi

hcasim="${HCASIM:-build/hcasim}"
[ -x "$hcasim" ] || { echo "wqe_rate.sh: $hcasim not found; run ./build.sh run first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "wqe_rate.sh: needs python3" >&2; exit 2; }

tmp="$(mktemp -d)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

printf '%-20s %8s %8s %8s %10s %10s %9s %10s %10s %9s %8s\n' \
    scenario wqes wall_s cpu_s wqes/s wqes/cpu_s sim_us events events/wqe wl_ev/wqe slowdown
for c in "${cases[@]}"; do
    read -r name size qps iters <<<"$c"
    scenario "$tmp/$name.json" "$name" "$size" "$qps" "$iters"
    runs=()
    for ((r = 0; r < repeats; r++)); do
        TIMEFORMAT='%U %S'
        { time "$hcasim" run "$tmp/$name.json" -o "$tmp/$name.$r" --quiet; } 2>"$tmp/$name.$r.cpu"
        runs+=("$tmp/$name.$r")
    done
    python3 - "$name" "${runs[@]}" <<'EOF'
import json, sys
name, dirs = sys.argv[1], sys.argv[2:]
runs = []
for d in dirs:
    s = json.load(open(d + "/stats.json"))
    user, system = open(d + ".cpu").read().split()[-2:]
    s["cpu_s"] = float(user) + float(system)
    runs.append(s)
s = min(runs, key=lambda r: r["cpu_s"])   # the fastest repeat: least disturbed by other load
w = s["workloads"][0]
wqes = w["iters"] * w["qps"]
print("%-20s %8d %8.3f %8.3f %10.0f %10.0f %9.0f %10d %10.2f %9.2f %8.1f" % (
    name, wqes, s["wall_time_s"], s["cpu_s"], wqes / s["wall_time_s"], wqes / s["cpu_s"],
    s["sim_time_ns"] / 1e3, s["events"], s["events"] / wqes, w["events_per_op"],
    s["cpu_s"] / (s["sim_time_ns"] / 1e9)))
EOF
done
echo "wqes/s, wqes/cpu_s: simulated WQEs per wall-clock / CPU second of the whole run (setup included);"
echo "events/wqe: kernel events of the run per WQE; wl_ev/wqe: the workload's own (stats.json events_per_op);"
echo "slowdown: CPU seconds per simulated second (setup included)."

if [ "$instructions" = 1 ] || [ "$tlps" = 1 ]; then
    command -v valgrind >/dev/null || { echo "wqe_rate.sh: -i, -u and -t need valgrind (apt-get install valgrind)" >&2; exit 2; }
fi
# Runs BASE.json under callgrind (output in BASE/, the profile in BASE.cg) and prints the
# instructions it counted.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$1.cg" \
        "$hcasim" run "$1.json" -o "$1" --quiet >/dev/null 2>&1
    sed -n 's/^summary: //p; s/^totals: //p' "$1.cg" | head -1
}
if [ "$instructions" = 1 ]; then
    echo
    printf '%-20s %10s %14s\n' scenario wqes instr/wqe
    for c in "${cases[@]}"; do
        read -r name size qps iters <<<"$c"
        counts=()
        wqes=()
        for n in 2000 1; do
            per_qp=$(( (n + qps - 1) / qps ))
            [ "$n" -gt 1 ] && [ "$per_qp" -lt 5 ] && per_qp=5
            scenario "$tmp/$name.i$n.json" "$name" "$size" "$qps" "$per_qp"
            counts+=("$(instructions "$tmp/$name.i$n")")
            wqes+=("$((per_qp * qps))")
        done
        python3 -c "import sys; a,b,wa,wb=map(int,sys.argv[1:]); print('%-20s %10d %14.0f' % ('$name', wa-wb, (a-b)/(wa-wb)))" \
            "${counts[0]}" "${counts[1]}" "${wqes[-2]}" "${wqes[-1]}"
        [ "$units" = 1 ] && python3 bench/cg_units.py "$tmp/$name.i2000.cg" "$tmp/$name.i1.cg" \
            "$((wqes[-2] - wqes[-1]))"
    done
    echo "instr/wqe: instructions per WQE beyond setup (callgrind Ir of 2,000 WQEs, at least 5 per QP, less"
    echo "that of one per QP)."
fi

if [ "$tlps" = 1 ]; then
echo
printf '%-24s %10s %14s\n' scenario tlps instr/tlp
# Instructions (callgrind) and PCIe TLPs (stats.json, both nodes) of 1,000 WQEs of one size.
measure() {
    local size=$1
    scenario "$tmp/tlp_$size.json" "tlp_$size" "$size" 1 1000
    echo "$(instructions "$tmp/tlp_$size")" \
        "$(python3 -c "import json, sys; n = json.load(open(sys.argv[1]))['nodes']; print(sum(v['hca']['pcie']['tlps'] for v in n.values()))" "$tmp/tlp_$size/stats.json")"
}
read -r small_ir small_tlps <<<"$(measure 4096)"
read -r large_ir large_tlps <<<"$(measure 16384)"
python3 -c "import sys; a, ta, b, tb = map(int, sys.argv[1:]); print('%-24s %10d %14.0f' % ('write_bw_16KiB_vs_4KiB', tb - ta, (b - a) / (tb - ta)))" \
    "$small_ir" "$small_tlps" "$large_ir" "$large_tlps"
echo "instr/tlp: instructions per extra TLP (callgrind Ir of 1,000 WQEs of 16 KiB less 1,000 of 4 KiB,"
echo "over the extra TLPs on both nodes' PCIe links)."
fi

[ "$perf" = 1 ] || exit 0
# Writes a perftest scenario of 64 B on one QP: perf_scenario FILE NAME TYPE ITERS.
perf_scenario() {
    cat >"$1" <<EOF
{
  "name": "$2",
  "description": "bench/wqe_rate.sh -p: $3, 64 B, one QP, $4 iterations",
  "seed": 1,
  "workloads": [{"type": "$3", "client": "a", "server": "b", "size": 64, "iters": $4}],
  "expect": [{"stat": "workloads.0.data_check", "eq": "ok"}]
}
EOF
}
echo
printf '%-20s %8s %8s %12s %12s %14s\n' scenario iters cpu_s iters/cpu_s events/iter instr/iter
for c in "write_lat_64B ib_write_lat $((50000 * scale))" "send_lat_64B ib_send_lat $((50000 * scale))" \
    "send_bw_64B_1qp ib_send_bw $((100000 * scale))"; do
    read -r name type iters <<<"$c"
    perf_scenario "$tmp/$name.json" "$name" "$type" "$iters"
    best=""
    for ((r = 0; r < repeats; r++)); do
        TIMEFORMAT='%U %S'
        { time "$hcasim" run "$tmp/$name.json" -o "$tmp/$name.$r" --quiet; } 2>"$tmp/$name.$r.cpu"
        cpu=$(tail -1 "$tmp/$name.$r.cpu" | awk '{print $1 + $2}')
        if [ -z "$best" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$cpu" "$best"; then
            best=$cpu
            best_run="$tmp/$name.$r"
        fi
    done
    per_iter="-"
    if [ "$instructions" = 1 ]; then
        counts=()
        for n in 2000 1; do
            perf_scenario "$tmp/$name.i$n.json" "$name" "$type" "$n"
            counts+=("$(instructions "$tmp/$name.i$n")")
        done
        per_iter=$(python3 -c "import sys; print(round((int(sys.argv[1]) - int(sys.argv[2])) / 1999))" "${counts[@]}")
    fi
    python3 - "$name" "$best_run" "$best" "$per_iter" <<'EOF'
import json, sys
name, run, cpu, per_iter = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
s = json.load(open(run + "/stats.json"))
w = s["workloads"][0]
print("%-20s %8d %8.3f %12.0f %12.2f %14s" % (name, w["iters"], cpu, w["iters"] / cpu,
                                              w["events_per_op"], per_iter))
EOF
done
echo "per iteration: a round trip of two messages for the latency tests, a WQE for ib_send_bw;"
echo "cpu_s: the fastest of the repeats, setup included; events/iter: the workload's events_per_op;"
echo "instr/iter (-i): callgrind Ir of 2,000 iterations less that of one, over 1,999."

