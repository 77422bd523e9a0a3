#!/usr/bin/env bash
# Sweep scaling: the same 16-point sweep (16 seeds of one ib_write_bw run, so every point costs
# the same) with -j 1 and with -j 2; prints both wall times and their ratio (ideal: 2.0 on two
# or more free cores). usage: bench/sweep_scaling.sh [HCASIM] (default build/hcasim)
set -euo pipefail
cd "$(dirname "$0")/.."
hcasim=$(realpath "${1:-build/hcasim}")
work=$(mktemp -d /tmp/hcasim-sweep-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat >"$work/base.json" <<'JSON'
{"name": "sweep_scaling", "description": "one point of bench/sweep_scaling.sh",
 "workloads": [{"type": "ib_write_bw", "client": "a", "server": "b", "size": 4096, "iters": 80000}]}
JSON
cat >"$work/sweep.json" <<'JSON'
{"base": "base.json", "axes": {"seed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]},
 "metrics": ["workloads.0.gbps", "wall_time_s"]}
JSON

wall() {  # wall seconds of one sweep with -j $1
    local start end
    start=$(date +%s.%N)
    "$hcasim" sweep "$work/sweep.json" -o "$work/j$1" -j "$1" 2>/dev/null
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
t1=$(wall 1)
t2=$(wall 2)
cmp -s <(cut -d, -f1-3 "$work/j1/results.csv") <(cut -d, -f1-3 "$work/j2/results.csv") ||
    { echo "sweep_scaling: -j 1 and -j 2 disagree on the results" >&2; exit 1; }
printf 'cores: %s, load average before / after: %s / %s (other work on the machine skews the ratio)\n' \
    "$(nproc)" "$load_before" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'points: 16, one run each %.2f s (median of -j 1 rows)\n' \
    "$(cut -d, -f4 "$work/j1/results.csv" | tail -n +2 | sort -n | sed -n 8p)"
printf -- '-j 1: %.2f s\n-j 2: %.2f s\nratio (-j 1 / -j 2): %.2f\n' "$t1" "$t2" "$(echo "$t1 / $t2" | bc -l)"
