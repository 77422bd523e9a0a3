#!/usr/bin/env bash
# bench/ab_cpu.sh compares two builds: the same binary twice gives a row per scenario and exit 0;
# a "build" that simulates something else (the same binary with another PCIe generation) is
# reported by name and fails with exit 1; a run that fails stops it with exit 2 and its stderr.
# bench/wqe_rate.sh -w writes the three scenarios ab_cpu.sh runs by default (a relative folder
# taken from the current one), and they pass `hcasim check`. Whether one build is faster is for the
# benchmark, not for this test.
# usage: ab_cpu_test.sh HCASIM SOURCE_DIR OUT_DIR
set -euo pipefail
hcasim="$1" src="$2" out="$3"
rm -rf "$out"
mkdir -p "$out"
cat >"$out/small.json" <<'JSON'
{"name": "small", "seed": 1,
 "workloads": [{"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 200}],
 "expect": [{"stat": "workloads.0.data_check", "eq": "ok"}]}
JSON
"$src/bench/ab_cpu.sh" -n 2 "$hcasim" "$hcasim" "$out/small.json" >"$out/same.txt"
grep -Eq '^small +2 +[0-9.]+ ' "$out/same.txt" || { cat "$out/same.txt"; exit 1; }
printf '#!/bin/sh\nexec "%s" "$@" --set defaults.pcie.gen=4\n' "$hcasim" >"$out/gen4"
chmod +x "$out/gen4"
rc=0
"$src/bench/ab_cpu.sh" -n 1 "$hcasim" "$out/gen4" "$out/small.json" >"$out/other.txt" \
    2>"$out/other.err" || rc=$?
[ "$rc" = 1 ] || { echo "a build with other results: exit $rc, expected 1"; exit 1; }
grep -q 'small: the two builds simulate different results' "$out/other.err" ||
    { cat "$out/other.err"; exit 1; }
cat >"$out/fails.json" <<'JSON'
{"name": "fails", "seed": 1,
 "workloads": [{"type": "ib_write_bw", "client": "a", "server": "b", "size": 64, "iters": 100}],
 "expect": [{"stat": "workloads.0.gbps", "min": 1000}]}
JSON
rc=0
"$src/bench/ab_cpu.sh" -n 1 "$hcasim" "$hcasim" "$out/fails.json" >/dev/null 2>"$out/fails.err" ||
    rc=$?
[ "$rc" = 2 ] || { echo "a run that fails: exit $rc, expected 2"; exit 1; }
grep -q 'ab_cpu.sh: fails: A .* failed:' "$out/fails.err" || { cat "$out/fails.err"; exit 1; }
grep -q 'expected min 1000' "$out/fails.err" || { cat "$out/fails.err"; exit 1; }
# A relative folder is the current folder's.
(cd "$out" && "$src/bench/wqe_rate.sh" -w wqe_rate)
n=0
for f in "$out"/wqe_rate/*.json; do
    "$hcasim" check "$f" >/dev/null
    n=$((n + 1))
done
[ "$n" = 3 ] || { echo "wqe_rate.sh -w wrote $n scenarios, expected 3"; exit 1; }
echo "ab_cpu: same build exit 0, other results exit 1; wqe_rate.sh -w: 3 scenarios"
