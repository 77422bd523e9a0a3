#!/usr/bin/env bash
# The validation command (bench/validate.py) runs its latency and PCIe latency points end to end
# and reports, per point, a published value with its source, hcasim's value from the run and the
# error. Whether the points meet their targets is for the table and docs/calibration.md, not for
# this test; it fails when the command breaks (a scenario, a stat path or the report).
# usage: validate_test.sh HCASIM SOURCE_DIR OUT_DIR
set -euo pipefail
hcasim="$1" src="$2" out="$3"
mkdir -p "$out"
python3 "$src/bench/validate.py" --hcasim "$hcasim" --out "$out/runs" --only latency,pcie_latency \
    --pcie-grid none --report-only --json "$out/points.json" > "$out/table.txt"
python3 - "$out/points.json" "$out/table.txt" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
ids = {r["id"] for r in rows}
need = {"send_lat_32", "send_lat_1k", "send_lat_4k", "send_lat_32k", "write_lat_64",
        "pcie_lat.read.64", "pcie_lat.write_read.2048"}
assert need <= ids, "missing points: %s" % (need - ids)
for r in rows:
    assert r["hcasim"] > 0 and r["published"] > 0 and r["source"], r
    assert abs(r["error"] - (r["hcasim"] - r["published"]) / r["published"]) < 1e-9, r
    assert r["what"] in table, r["what"]
assert "%d points" % len(rows) in table
print("validate: %d points reported" % len(rows))
PY
