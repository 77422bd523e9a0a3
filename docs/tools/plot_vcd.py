#!/usr/bin/env python3
"""Draws signals of hcasim waves.vcd files one above the other, as a waveform viewer would.

usage: plot_vcd.py OUT.png LABEL=WAVES.vcd [LABEL=WAVES.vcd ...] --signals a.hca.qpc_cache.misses,...
       [--from 200us] [--to 260us] [--rate 1us]

With --rate, strobe signals (hits, misses, count) are drawn as events per interval instead of as
pulses. Used for the worked example in docs/observability.md.
"""
import argparse
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNITS = {"ps": 1, "ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}


def ps(text):
    m = re.fullmatch(r"([0-9.]+)\s*(ps|ns|us|ms|s)", text)
    if not m:
        raise SystemExit(f"bad time {text!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def read_vcd(path, wanted):
    ids, scope, changes, now = {}, [], {}, 0
    with open(path) as f:
        tokens = f.read().split()
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "$scope":
            scope.append(tokens[i + 2])
            i += 4
        elif t == "$upscope":
            scope.pop()
            i += 2
        elif t == "$var":
            name = ".".join(scope + [tokens[i + 4]])
            if name in wanted:
                ids[tokens[i + 3]] = name
                changes[name] = []
            i += 6
        elif t.startswith("#"):
            now = int(t[1:])
            i += 1
        elif t.startswith("b"):
            if tokens[i + 1] in ids:
                changes[ids[tokens[i + 1]]].append((now, int(t[1:], 2)))
            i += 2
        else:
            i += 1
    return changes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--signals", required=True)
    ap.add_argument("--from", dest="t0", default="0ps")
    ap.add_argument("--to", dest="t1", default=None)
    ap.add_argument("--rate", default=None)
    a = ap.parse_args()
    signals = a.signals.split(",")
    t0, t1 = ps(a.t0), ps(a.t1) if a.t1 else None
    runs = [r.rsplit("=", 1) for r in a.runs]
    fig, axes = plt.subplots(len(signals), len(runs), figsize=(5.5 * len(runs), 1.6 * len(signals) + 0.8),
                             sharex=True, squeeze=False)
    for col, (label, path) in enumerate(runs):
        data = read_vcd(path, set(signals))
        end = t1 or max((c[-1][0] for c in data.values() if c), default=t0 + 1)
        for row, sig in enumerate(signals):
            ax = axes[row][col]
            pts = [(t, v) for t, v in data.get(sig, []) if t0 <= t <= end]
            strobe = sig.rsplit(".", 1)[-1] in ("hits", "misses", "count") or sig.endswith("_hits") or sig.endswith("_misses")
            if a.rate and strobe:
                width = ps(a.rate)
                bins = int((end - t0) // width) + 1
                counts = [0] * bins
                prev = 0
                for t, v in pts:
                    if v > prev:
                        counts[int((t - t0) // width)] += v - prev
                    prev = v
                ax.bar([(t0 + k * width) / 1e6 for k in range(bins)], counts, width=width / 1e6, align="edge",
                       color="tab:red" if "miss" in sig else "tab:green")
                ax.set_ylabel(f"per {a.rate}", fontsize=8)
            else:
                xs, ys, value = [t0 / 1e6], [0], 0
                for t, v in pts:
                    xs += [t / 1e6, t / 1e6]
                    ys += [value, v]
                    value = v
                xs.append(end / 1e6)
                ys.append(value)
                ax.plot(xs, ys, drawstyle="default", linewidth=0.8)
            ax.set_title(f"{label}: {sig}", fontsize=9, loc="left")
            ax.tick_params(labelsize=8)
        axes[-1][col].set_xlabel("simulated time (us)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
