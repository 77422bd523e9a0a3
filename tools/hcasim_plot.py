#!/usr/bin/env python3
"""hcasim plot: one metric of a sweep's results.csv against one axis, a line per series value.

    hcasim plot results.csv --x AXIS --y METRIC [--series AXIS] [--where AXIS=VALUE]...
                -o plot.png|plot.svg

Columns are named as in results.csv (dotted scenario paths for axes, dotted stats paths for
metrics). Rows whose exit_status is not 0, or whose metric is empty, are left out (and counted on
stderr). Rows that share the x and series value (other axes that vary) are averaged. Axis labels
carry units derived from the column names (bytes, entries, Gb/s, Mpps, ns, fraction, ...); the
x axis is logarithmic when its values span more than two decades (base 2 with IEC labels for
sizes). Exit codes as hcasim: 0 ok, 2 bad input, 3 internal error.
"""

import argparse
import csv
import math
import os
import re
import sys

IEC = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)

# Last segment (or suffix) of a dotted path -> unit. First match wins.
UNITS = [
    (r"(^|\.)lat_ns\.", "ns"),
    (r"_ns$", "ns"),
    (r"(^|\.)(wall_time_s|time_s|wall_s)$", "s"),
    (r"(^|\.)gbps$", "Gb/s"),
    (r"(^|\.)mops$", "Mpps"),
    (r"hit_rate$|utilization$|(^|\.)\w*_rate$", "fraction"),
    (r"(^|\.)entries$", "entries"),
    (r"(^|\.)ways$", "ways"),
    (r"(^|\.)pcie\.gen$|(^|\.)gen$", "PCIe generation"),
    (r"(^|\.)lanes$", "lanes"),
    (r"(^|\.)qps$", "QPs"),
    (r"(^|\.)iters$", "iterations"),
    (r"(^|\.)(tx_depth|sq_depth|rq_depth|depth)$", "WQEs"),
    (r"(^|\.)read_tags$", "tags"),
    (r"(^|\.)(hugepages_2m|hugepages_1g|pinned_pages|swap_outs|swap_ins)$", "pages"),
    (r"(^|\.)port\.mtu$|(^|\.)mtu$", "bytes"),
    (r"(^|\.)(size|mr_size|page_size|length|mps|mrrs|rcb|memory|bytes|\w+_bytes)$", "bytes"),
    (r"(^|\.)(hits|misses|lookups|faults|count|tlps|wqes|events|\w+_hits|\w+_misses)$", "count"),
    (r"(^|\.)clock$", "Hz"),
]


def unit_of(name):
    for pattern, unit in UNITS:
        if re.search(pattern, name):
            return unit
    return ""


def label_of(name):
    unit = unit_of(name)
    return f"{name} [{unit}]" if unit else name


def number(text):
    """A float from a CSV cell: plain numbers, or sizes with IEC suffixes ("4KiB", "2MiB")."""
    try:
        return float(text)
    except ValueError:
        pass
    m = SIZE_RE.match(text)
    if m and (m.group(2) or m.group(3)):
        return float(m.group(1)) * IEC[m.group(2).upper()]
    return None


def iec(value):
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        scale = IEC[suffix[0]]
        if value >= scale and value % scale == 0:
            return f"{int(value // scale)}{suffix}B"
    return f"{value:g}"


def fail(message, code=2):
    print(f"hcasim plot: {message}", file=sys.stderr)
    sys.exit(code)


def read_rows(path, columns):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            for c in columns:
                if c and c not in header:
                    fail(f"{path}: no column \"{c}\" (columns: {', '.join(header)})")
            return list(reader), header
    except OSError as e:
        fail(f"{path}: {e.strerror}")


def main(argv):
    ap = argparse.ArgumentParser(prog="hcasim plot", description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="a sweep's results.csv")
    ap.add_argument("--x", required=True, help="axis column for the x axis")
    ap.add_argument("--y", required=True, help="metric column for the y axis")
    ap.add_argument("--series", help="axis column: one line per value")
    ap.add_argument("-o", "--out", required=True, help="output file, .png or .svg")
    ap.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                    help="keep only rows where COLUMN equals VALUE (repeatable)")
    ap.add_argument("--title", help="plot title (default: the metric against the axis)")
    scale = ap.add_mutually_exclusive_group()
    scale.add_argument("--logx", action="store_true", help="logarithmic x axis")
    scale.add_argument("--linx", action="store_true", help="linear x axis")
    ap.add_argument("--logy", action="store_true", help="logarithmic y axis")
    args = ap.parse_args(argv)

    ext = os.path.splitext(args.out)[1].lower()
    if ext not in (".png", ".svg"):
        fail(f"-o {args.out}: unknown format (expected a .png or .svg file)")
    where = []
    for w in args.where:
        if "=" not in w:
            fail(f"--where {w}: expected COLUMN=VALUE")
        where.append(tuple(w.split("=", 1)))
    rows, header = read_rows(args.csv, [args.x, args.y, args.series] + [c for c, _ in where])
    for column, value in where:
        rows = [r for r in rows if r[column] == value or
                (number(r[column]) is not None and number(r[column]) == number(value))]

    groups = {}  # series label -> x value -> [y]
    series_keys = {}
    x_labels = {}
    skipped = 0
    for row in rows:
        if row.get("exit_status", "0") not in ("0", "") or row[args.y] == "":
            skipped += 1
            continue
        x, y = number(row[args.x]), number(row[args.y])
        if y is None:
            fail(f"{args.csv}: column \"{args.y}\" holds \"{row[args.y]}\", not a number")
        if x is None:  # categorical x: keep the order of first appearance
            x = x_labels.setdefault(row[args.x], float(len(x_labels)))
        s = row[args.series] if args.series else ""
        series_keys.setdefault(s, number(s) if number(s) is not None else len(series_keys))
        groups.setdefault(s, {}).setdefault(x, []).append(y)
    if skipped:
        print(f"hcasim plot: left out {skipped} row(s) that failed or lack {args.y}", file=sys.stderr)
    if not groups:
        fail(f"{args.csv}: no row to plot")
    averaged = sum(1 for g in groups.values() for ys in g.values() if len(ys) > 1)
    if averaged:
        print(f"hcasim plot: averaged {averaged} point(s) over rows where other axes vary",
              file=sys.stderr)

    try:
        import matplotlib
    except ImportError:
        fail(f"{sys.executable} has no matplotlib (apt-get install python3-matplotlib)", 3)
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: labels are searchable
    matplotlib.rcParams["svg.hashsalt"] = "hcasim"
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    all_x = sorted({x for g in groups.values() for x in g})
    for s in sorted(groups, key=lambda k: series_keys[k]):
        xs = sorted(groups[s])
        ys = [sum(groups[s][x]) / len(groups[s][x]) for x in xs]
        label = (iec(number(s)) if unit_of(args.series) == "bytes" and number(s) else s) if s else None
        ax.plot(xs, ys, marker="o", label=label)

    x_unit = unit_of(args.x)
    positive = [x for x in all_x if x > 0]
    log_x = args.logx or (
        not args.linx and not x_labels and positive and len(positive) == len(all_x)
        and max(positive) / min(positive) > 100
    )
    if log_x:
        ax.set_xscale("log", base=2 if x_unit == "bytes" else 10)
    if x_labels:
        ax.set_xticks(list(x_labels.values()), list(x_labels.keys()))
    elif x_unit == "bytes":
        ax.set_xticks(all_x)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: iec(v)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    elif len(all_x) <= 12:
        ax.set_xticks(all_x)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    if args.logy:
        ax.set_yscale("log")
    ax.set_xlabel(label_of(args.x))
    ax.set_ylabel(label_of(args.y))
    ax.set_title(args.title or f"{args.y} vs {args.x}" +
                 "".join(f", {c}={v}" for c, v in where))
    ax.grid(True, which="major", alpha=0.3)
    if args.series:
        ax.legend(title=label_of(args.series), fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(args.out, metadata={"Date": None} if ext == ".svg" else None)
    except OSError as e:
        fail(f"cannot write {args.out}: {e.strerror}", 3)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
