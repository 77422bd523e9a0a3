#!/usr/bin/env bash
# QP scale: peak RSS and CPU time of hcasim as the number of connected QPs grows.
#
# For each count N, generates an ib_write_bw scenario in a temporary folder (64 B, N QPs between
# two default nodes, one iteration per QP: every QP is created, its rings mmapped, pinned and
# given buffer tables, connected, and used once), runs it with build/hcasim and reports the
# process's peak resident set size and CPU time (user + system) from the kernel's accounting of
# the child, in all and per QP pair. Counts above 65,472 need a bigger QP context table than the
# default 2^16 entries (QPNs start at 0x40): the bench sets host.driver.log_qps to fit.
#
# usage: bench/qp_scale.sh [COUNT...]     (default: 1 256 4096 16384 65536)
# Environment: HCASIM (default: build/hcasim next to this folder), KEEP=1 keeps the temp folder.
# Needs: bash, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;; esac

hcasim="${HCASIM:-build/hcasim}"
[ -x "$hcasim" ] || { echo "qp_scale.sh: $hcasim not found; run ./build.sh run first" >&2; exit 2; }

tmp="$(mktemp -d)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

python3 - "$hcasim" "$tmp" "${@:-1 256 4096 16384 65536}" <<'PY'
import json, math, resource, subprocess, sys, time
hcasim, tmp = sys.argv[1], sys.argv[2]
counts = [int(c) for arg in sys.argv[3:] for c in arg.split()]
print("%8s %9s %8s %12s %14s %12s" % ("qps", "wall_s", "cpu_s", "peak_rss_MiB", "rss_KiB/qp", "cpu_us/qp"))
for n in counts:
    log_qps = max(16, math.ceil(math.log2(n + 0x40)))
    driver = {"driver": {"log_qps": log_qps}}
    scenario = {
        "name": "qp_scale_%d" % n,
        "description": "bench/qp_scale.sh: ib_write_bw, 64 B, %d QPs, one iteration each" % n,
        "seed": 1,
        "nodes": {"a": {"host": driver}, "b": {"host": driver}},
        "workloads": [{"type": "ib_write_bw", "client": "a", "server": "b", "size": 64,
                       "qps": n, "iters": 1}],
        "expect": [{"stat": "workloads.0.data_check", "eq": "ok"}],
    }
    path = "%s/qp_scale_%d.json" % (tmp, n)
    json.dump(scenario, open(path, "w"), indent=1)
    t0 = time.time()
    # Each count in its own child, so that ru_maxrss is this run's peak: run it through a shell
    # that reports its own child's usage.
    r = subprocess.run(["python3", "-c",
        "import resource,subprocess,sys;"
        "c=subprocess.run(sys.argv[1:]).returncode;"
        "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(u.ru_utime+u.ru_stime,u.ru_maxrss);sys.exit(c)",
        hcasim, "run", path, "-o", "%s/out_%d" % (tmp, n), "--quiet"],
        stdout=subprocess.PIPE, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        sys.exit("qp_scale.sh: hcasim failed for %d QPs (exit %d)" % (n, r.returncode))
    cpu, maxrss = r.stdout.split()[-2:]
    cpu, rss = float(cpu), int(maxrss) * 1024
    print("%8d %9.2f %8.2f %12.0f %14.1f %12.1f" % (n, wall, cpu, rss / 2**20, rss / 1024 / n, cpu * 1e6 / n))
PY
