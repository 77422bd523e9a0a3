#!/usr/bin/env bash
# CPU time of two hcasim builds side by side: each scenario is run by A, then B, then A again and
# so on (interleaved, so a machine that gets slower or faster over the minutes weighs on both
# alike), and the median CPU time (user + system) of each build is compared. The simulated
# results must not differ: a speed change leaves them as they are, so the two builds' stats.json
# are compared too (all of it but the wall time and how the run was started: simulated time,
# kernel events, every workload's and node's numbers and the configuration): a value that differs
# fails the run (exit 1); keys only one build has (a counter or parameter B adds) are listed and
# do not. A run that fails (its exit status) stops the comparison (exit 2, with its stderr).
#
# usage: bench/ab_cpu.sh [-n RUNS] A_HCASIM B_HCASIM [SCENARIO.json ...]
#   -n RUNS   runs per build and scenario (default 5); A runs first in even rounds, B in odd ones
#   without scenarios: bench/wqe_rate.sh's three (64 B on 1 QP, 4 KiB on 16 QPs, 64 B on 4,096
#   QPs)
# Prints per scenario A's and B's median CPU seconds, their range, and B / A (below 1: B is
# faster). Paths are taken from the current folder. Needs: bash, python3.
set -euo pipefail
export LC_ALL=C  # bash's `time` prints the locale's decimal point
here="$(cd "$(dirname "$0")/.." && pwd)"

runs=5
while getopts "n:h" opt; do
    case "$opt" in
        n) runs="$OPTARG" ;;
        *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "ab_cpu.sh: -n $runs: expected a number of runs, 1 or more" >&2; exit 2; }
[ $# -ge 2 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
for f in "$@"; do
    [ -e "$f" ] || { echo "ab_cpu.sh: $f: no such file" >&2; exit 2; }
done
a=$(realpath "$1")
b=$(realpath "$2")
shift 2
for h in "$a" "$b"; do
    [ -x "$h" ] && [ -f "$h" ] || { echo "ab_cpu.sh: $h is not an executable file" >&2; exit 2; }
done
scenarios=()
for f in "$@"; do scenarios+=("$(realpath "$f")"); done
command -v python3 >/dev/null || { echo "ab_cpu.sh: needs python3" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ ${#scenarios[@]} -eq 0 ]; then
    "$here/bench/wqe_rate.sh" -w "$tmp/scenarios"
    scenarios=("$tmp"/scenarios/*.json)
fi

printf '%-24s %5s %9s %17s %9s %17s %7s\n' scenario runs A_cpu_s "A range" B_cpu_s "B range" B/A
status=0
for s in "${scenarios[@]}"; do
    name=$(basename "$s" .json)
    for ((r = 0; r < runs; r++)); do
        order="A B"
        [ $((r % 2)) = 1 ] && order="B A"  # neither build always runs on the other's heels
        for side in $order; do
            [ "$side" = A ] && h="$a" || h="$b"
            out="$tmp/$name.$side.$r"
            TIMEFORMAT='%U %S'
            if ! { time "$h" run "$s" -o "$out" --quiet >/dev/null 2>"$out.err"; } 2>"$out.cpu"; then
                echo "ab_cpu.sh: $name: $side ($h) failed:" >&2
                cat "$out.err" >&2
                exit 2
            fi
        done
    done
    python3 - "$tmp/$name" "$runs" "$name" <<'EOF' || status=1
import json, statistics, sys
base, runs, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def cpu(side, r):
    user, system = open("%s.%s.%d.cpu" % (base, side, r)).read().split()[-2:]
    return float(user) + float(system)
def results(side):
    # What the simulation computed: all of stats.json but how long the run took and which
    # binary ran it, how (its command line names its output folder).
    s = json.load(open("%s.%s.0/stats.json" % (base, side)))
    return {k: v for k, v in s.items() if k not in ("wall_time_s", "run", "hcasim_version")}
t = {side: [cpu(side, r) for r in range(runs)] for side in "AB"}
ma, mb = statistics.median(t["A"]), statistics.median(t["B"])
print("%-24s %5d %9.3f %8.3f-%-8.3f %9.3f %8.3f-%-8.3f %7.3f" % (
    name, runs, ma, min(t["A"]), max(t["A"]), mb, min(t["B"]), max(t["B"]), mb / ma))
# Leaves that differ, and those only one build has (a counter or parameter added).
def leaves(v, path=""):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + "/" + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + "/" + str(i))
    else:
        yield path, v
a, b = dict(leaves(results("A"))), dict(leaves(results("B")))
changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
only = sorted(set(a) ^ set(b))
if only:
    print("  %s: in one build's stats.json only (%d): %s%s" % (
        name, len(only), ", ".join(("A " if k in a else "B ") + k for k in only[:8]),
        " ..." if len(only) > 8 else ""), file=sys.stderr)
if changed:
    print("  %s: the two builds simulate different results (%d values differ: %s%s)" % (
        name, len(changed), ", ".join(changed[:8]), " ..." if len(changed) > 8 else ""),
        file=sys.stderr)
    sys.exit(1)
EOF
done
echo "A: $a"
echo "B: $b"
echo "CPU s: user + system of the whole run (setup included), median of $runs; runs interleaved A, B, A, B, ..."
exit "$status"
