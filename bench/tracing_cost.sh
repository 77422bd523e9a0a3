#!/usr/bin/env bash
# What tracing costs when it is off: the same ib_write_bw runs (bench/wqe_rate.sh) with the default
# build, whose every unit calls its tracing hooks (one predictable branch each while tracing is
# off), and with a build configured with -DHCASIM_TRACE_HOOKS=OFF, where the hooks compile away.
# Also runs the default build with --trace and --vcd, for what tracing costs when on.
#
# The two binaries run in turns (A B A B ...) so that load on the machine affects both alike; the
# fastest CPU time (user + system) of each is compared. Prints one row per scenario and binary.
#
# usage: bench/tracing_cost.sh [-n ROUNDS] [-s SCALE]
#   -n ROUNDS  turns per binary (default 5)
#   -s SCALE   multiply the iteration counts (default 1)
# Environment: HCASIM (default build/hcasim), NOTRACE_BUILD (default build-notrace: configured and
# built here when missing; takes a few minutes). Needs: bash, cmake, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
scale=1
while getopts "n:s:h" opt; do
    case "$opt" in
        n) rounds="$OPTARG" ;;
        s) scale="$OPTARG" ;;
        *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

hcasim="${HCASIM:-build/hcasim}"
notrace_dir="${NOTRACE_BUILD:-build-notrace}"
[ -x "$hcasim" ] || { echo "tracing_cost.sh: $hcasim not found; run ./build.sh run first" >&2; exit 2; }
if [ ! -x "$notrace_dir/hcasim" ]; then
    cmake -S . -B "$notrace_dir" -DCMAKE_BUILD_TYPE=Release -DHCASIM_TRACE_HOOKS=OFF >/dev/null
    cmake --build "$notrace_dir" -j"$(nproc)" --target hcasim >/dev/null
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cases=(
    "write_bw_64B_1qp 64 1 $((100000 * scale))"
    "write_bw_4KiB_16qp 4096 16 $((4000 * scale))"
)
# label binary options
binaries=(
    "hooks_off_build|$notrace_dir/hcasim|"
    "default_build|$hcasim|"
    "tracing_on|$hcasim|--trace --vcd"
)

printf '%-20s %-16s %10s %12s %9s\n' scenario binary cpu_s wqes/cpu_s vs_hooks_off
for c in "${cases[@]}"; do
    read -r name size qps iters <<<"$c"
    cat >"$tmp/$name.json" <<JSON
{
  "name": "$name",
  "seed": 1,
  "workloads": [
    {"type": "ib_write_bw", "client": "a", "server": "b", "size": $size, "qps": $qps, "iters": $iters}
  ]
}
JSON
    for ((r = 0; r < rounds; r++)); do
        for b in "${binaries[@]}"; do
            IFS='|' read -r label bin opts <<<"$b"
            TIMEFORMAT='%U %S'
            # shellcheck disable=SC2086
            { time "$bin" run "$tmp/$name.json" -o "$tmp/out.$label" --quiet $opts >/dev/null; } 2>>"$tmp/$name.$label.cpu"
        done
    done
    python3 - "$name" "$tmp" "$((iters * qps))" "${binaries[@]}" <<'PY'
import sys
name, tmp, wqes, bins = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
best = {}
for b in bins:
    label = b.split("|")[0]
    times = [float(u) + float(s) for u, s in (l.split() for l in open(f"{tmp}/{name}.{label}.cpu") if l.strip())]
    best[label] = min(times)
base = best["hooks_off_build"]
for b in bins:
    label = b.split("|")[0]
    t = best[label]
    print("%-20s %-16s %10.3f %12.0f %+8.1f%%" % (name, label, t, wqes / t, (t / base - 1) * 100))
PY
done
