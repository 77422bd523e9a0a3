#!/usr/bin/env bash
# Fabric at scale: an all-to-all of small RDMA WRITEs among N nodes on one switch.
#
# Generates one scenario in a temporary folder: N nodes on a star (one switch with N ports),
# ib_write_bw with pattern all_to_all (N x (N - 1) pairs, every pair its own processes and QPs,
# all starting together), SIZE bytes, ITERS iterations per pair; runs it with build/hcasim and
# reports CPU time, peak RSS, WQEs per CPU second and the aggregates (sum of the pairs'
# bandwidths, min/avg/max per pair, Jain's fairness index).
#
# usage: bench/fabric_scale.sh [-n NODES] [-s SIZE] [-i ITERS]
#   -n NODES  nodes, 2..254 (one switch's ports; default 64: 4,032 pairs)
#   -s SIZE   message size (default 4KiB)
#   -i ITERS  iterations per pair (default 100)
# Environment: HCASIM (default: build/hcasim next to this folder), KEEP=1 keeps the temp folder.
# Needs: bash, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=64
size=4KiB
iters=100
while getopts "n:s:i:h" opt; do
    case "$opt" in
        n) nodes="$OPTARG" ;;
        s) size="$OPTARG" ;;
        i) iters="$OPTARG" ;;
        *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

[[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 2 ] && [ "$nodes" -le 254 ] ||
    { echo "fabric_scale.sh: -n $nodes: expected 2..254 nodes (a switch has at most 254 ports)" >&2; exit 2; }

hcasim="${HCASIM:-build/hcasim}"
[ -x "$hcasim" ] || { echo "fabric_scale.sh: $hcasim not found; run ./build.sh run first" >&2; exit 2; }

tmp="$(mktemp -d)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

python3 - "$hcasim" "$tmp" "$nodes" "$size" "$iters" <<'PY'
import json, resource, subprocess, sys, time
hcasim, tmp, nodes, size, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
scenario = {
    "name": "fabric_scale",
    "description": "bench/fabric_scale.sh: all-to-all of %s writes among %d nodes on one switch" % (size, nodes),
    "seed": 1,
    "nodes": {"n%03d" % i: {} for i in range(nodes)},
    "fabric": {"topology": "star", "switch": {"ports": max(36, nodes)}},
    "workloads": [{"type": "ib_write_bw", "pattern": "all_to_all", "size": size, "iters": iters}],
}
path = tmp + "/fabric_scale.json"
json.dump(scenario, open(path, "w"), indent=1)
t0 = time.time()
r = subprocess.run([hcasim, "run", path, "-o", tmp + "/out", "--quiet"])
wall = time.time() - t0
if r.returncode != 0:
    sys.exit("fabric_scale.sh: hcasim failed (exit %d)" % r.returncode)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
stats = json.load(open(tmp + "/out/stats.json"))
a = stats["workloads"][0]["aggregate"]
pairs = a["pairs"]
wqes = pairs * iters
print("%6s %7s %9s %8s %8s %12s %10s %10s %22s %6s" % (
    "nodes", "pairs", "wqes", "wall_s", "cpu_s", "peak_rss_MiB", "wqes/cpu_s", "sum_Gbps",
    "pair_Gbps_min/avg/max", "jain"))
print("%6d %7d %9d %8.1f %8.1f %12.0f %10.0f %10.1f %22s %6.3f" % (
    nodes, pairs, wqes, wall, cpu, ru.ru_maxrss / 1024, wqes / cpu, a["gbps"]["sum"],
    "%.2f/%.2f/%.2f" % (a["gbps"]["min"], a["gbps"]["avg"], a["gbps"]["max"]), a["jain_gbps"]))
PY
