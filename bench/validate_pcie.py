#!/usr/bin/env python3
"""Validates hcasim's PCIe link and DMA timing against published numbers:
  1. effective bandwidth of the `dma` workload against the pcie-bench analytical model
     (bench/pcie_model.py) over generations, widths, MPS, MRRS, sizes, reads and writes;
  2. one DMA read and one write-then-read (pcie-bench LAT_RD / LAT_WRRD medians, NFP-6000 on a
     Xeon E5-2630 v4, Gen3 x8, Neugebauer et al., SIGCOMM 2018, data repository) on the
     scenario scenarios/validation/nfp6000_read_latency.json.
Usage: bench/validate_pcie.py [--hcasim build/hcasim] [--quick] [-j N]
Prints one row per point; exits 1 if any point misses its target (2 % / 10 %)."""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcie_model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATENCY_SCENARIO = os.path.join(ROOT, "scenarios", "validation", "nfp6000_read_latency.json")
# pcie-bench data repository, nfp6000-1.2GHz_bdw-Xeon-E5-2630v4..., lat_dma_sizes medians (ns).
PUBLISHED_RD = {8: 533, 64: 546, 256: 626, 512: 706, 1024: 853, 2048: 1133}
PUBLISHED_WRRD = {64: 773, 2048: 1840}


def run(hcasim, doc):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "point.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = subprocess.run([hcasim, "run", path, "-o", d, "-q"], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr + out.stdout)
        with open(os.path.join(d, "stats.json")) as f:
            return json.load(f)


def bw_point(hcasim, gen, lanes, mps, mrrs, op, size):
    count = max(64, (4 << 20) // size)
    doc = {"name": "pcie_bw", "seed": 1,
           "defaults": {"pcie": {"gen": gen, "lanes": lanes, "mps": mps, "mrrs": mrrs}},
           "nodes": {"a": {"host": {"memory": "4GiB"}}},
           "workloads": [{"type": "dma", "node": "a", "op": op, "size": size, "count": count}]}
    stats = run(hcasim, doc)
    got = stats["workloads"][0]["gbps"]
    model = (pcie_model.read_gbps(size, gen, lanes, mps, mrrs) if op == "read"
             else pcie_model.write_gbps(size, gen, lanes, mps))
    return got, model


def grid(quick):
    points = []
    sizes = [64, 256, 1024, 4096, 65536] if not quick else [64, 1024, 65536]
    for gen in (1, 2, 3, 4, 5):
        for lanes in ((1, 4, 8, 16) if not quick else (1, 16)):
            for op in ("read", "write"):
                for size in sizes:
                    points.append((gen, lanes, 256, 512, op, size))
    for mps, mrrs in ((128, 128), (128, 512), (512, 1024), (1024, 4096), (4096, 4096)):
        for op in ("read", "write"):
            for size in (64, 1024, 65536):
                points.append((3, 8, mps, mrrs, op, size))
    return points


def latency_rows(hcasim):
    with open(LATENCY_SCENARIO) as f:
        base = json.load(f)
    rows = []
    for op, table in (("read", PUBLISHED_RD), ("write_read", PUBLISHED_WRRD)):
        for size, published in table.items():
            doc = json.loads(json.dumps(base))
            doc.pop("expect", None)
            doc["workloads"] = [{"type": "dma", "node": "a", "op": op, "size": size, "count": 1}]
            got = run(hcasim, doc)["workloads"][0]["time_ns"]
            rows.append((op, size, published, got))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcasim", default=os.path.join(ROOT, "build", "hcasim"))
    ap.add_argument("--quick", action="store_true", help="a smaller grid")
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    bad = 0
    print("Effective bandwidth, dma workload vs the pcie-bench model (target 2 %)")
    print(f"{'gen':>3} {'lanes':>5} {'mps':>5} {'mrrs':>5} {'op':>6} {'size':>6} "
          f"{'model Gb/s':>11} {'hcasim Gb/s':>11} {'error':>7}")
    points = grid(args.quick)
    with concurrent.futures.ThreadPoolExecutor(args.j) as ex:
        results = list(ex.map(lambda p: bw_point(args.hcasim, *p), points))
    worst = 0.0
    for (gen, lanes, mps, mrrs, op, size), (got, model) in zip(points, results):
        err = (got - model) / model
        worst = max(worst, abs(err))
        flag = "" if abs(err) <= 0.02 else "  <-- over 2 %"
        bad += bool(flag)
        print(f"{gen:>3} {'x' + str(lanes):>5} {mps:>5} {mrrs:>5} {op:>6} {size:>6} "
              f"{model:>11.2f} {got:>11.2f} {err * 100:>+6.2f}%{flag}")
    print(f"worst bandwidth error {worst * 100:.2f} % over {len(points)} points")
    print()
    print("Latency of one transfer, NFP-6000 setup (Gen3 x8, MPS 256, MRRS 512), target 10 %")
    print(f"{'test':>10} {'size':>5} {'published ns':>12} {'hcasim ns':>10} {'error':>7}")
    for op, size, published, got in latency_rows(args.hcasim):
        err = (got - published) / published
        flag = "" if abs(err) <= 0.10 else "  <-- over 10 %"
        bad += bool(flag)
        name = "LAT_RD" if op == "read" else "LAT_WRRD"
        print(f"{name:>10} {size:>5} {published:>12.0f} {got:>10.1f} {err * 100:>+6.2f}%{flag}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
