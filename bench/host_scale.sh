#!/usr/bin/env bash
# Host memory at scale: peak RSS and CPU time of hcasim for a big host with much memory
# registered on base pages.
#
# Generates one scenario in a temporary folder: a 1 TiB host (node a) that mmaps REGIONS regions
# of GIB GiB each on 4 KiB pages and registers each (reg_mr: every page faulted in, pinned and
# given a translation entry), then runs it with build/hcasim and reports the process's peak
# resident set size and CPU time (user + system) from the kernel's accounting of the child.
#
# usage: bench/host_scale.sh [-r REGIONS] [-g GIB]
#   -r REGIONS  regions to register (default 8)
#   -g GIB      GiB per region (default 8: 64 GiB in all, 16 Mi pages)
# Environment: HCASIM (default: build/hcasim next to this folder), KEEP=1 keeps the temp folder.
# Needs: bash, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

regions=8
gib=8
while getopts "r:g:h" opt; do
    case "$opt" in
        r) regions="$OPTARG" ;;
        g) gib="$OPTARG" ;;
        *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

hcasim="${HCASIM:-build/hcasim}"
[ -x "$hcasim" ] || { echo "host_scale.sh: $hcasim not found; run ./build.sh run first" >&2; exit 2; }

tmp="$(mktemp -d)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

python3 - "$hcasim" "$tmp" "$regions" "$gib" <<'PY'
import json, math, resource, subprocess, sys, time
hcasim, tmp, regions, gib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pages = regions * gib * (1 << 30) // 4096
prog = [{"node": "a", "op": "alloc_pd", "name": "pd0"}]
for i in range(regions):
    prog.append({"node": "a", "op": "mmap", "name": "r%d" % i, "length": "%dGiB" % gib})
    prog.append({"node": "a", "op": "reg_mr", "name": "mr%d" % i, "pd": "pd0", "buf": "r%d" % i,
                 "length": "%dGiB" % gib, "access": ["local_write", "remote_write"],
                 "expect": {"pages": gib * (1 << 30) // 4096}})
prog.append({"node": "a", "op": "check_stats", "expect": [
    {"stat": "nodes.a.host.pinned_user_pages", "eq": pages}]})
log_mtts = max(12, math.ceil(math.log2(pages + 1)))
scenario = {
    "name": "host_scale",
    "description": "bench/host_scale.sh: a 1 TiB host registers %d x %d GiB on 4 KiB pages" % (regions, gib),
    "seed": 1,
    "nodes": {"a": {"host": {"memory": "1TiB", "driver": {"log_mtts": log_mtts}}}},
    "program": prog,
}
path = tmp + "/host_scale.json"
json.dump(scenario, open(path, "w"), indent=1)
t0 = time.time()
r = subprocess.run([hcasim, "run", path, "-o", tmp + "/out", "--quiet"])
wall = time.time() - t0
if r.returncode != 0:
    sys.exit("host_scale.sh: hcasim failed (exit %d)" % r.returncode)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
rss = ru.ru_maxrss * 1024
print("%-12s %10s %9s %8s %12s %12s" % ("registered", "pages", "wall_s", "cpu_s", "peak_rss_MiB", "rss_B/page"))
print("%-12s %10d %9.1f %8.1f %12.0f %12.1f" % (
    "%d GiB" % (regions * gib), pages, wall, cpu, rss / 2**20, rss / pages))
PY
