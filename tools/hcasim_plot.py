#!/usr/bin/env python3
"""hcasim plot: one metric of a sweep's results.csv against one axis, a line per series value.

    hcasim plot results.csv --x AXIS --y METRIC [--series AXIS] [--where AXIS=VALUE]...
                -o plot.png|plot.svg|plot.pdf [--title T] [--xlabel T] [--ylabel T]
                [--ymin V] [--ymax V] [--logx|--linx] [--logy] [--average]

Columns are named as in results.csv (dotted scenario paths for axes, dotted stats paths for
metrics). Rows whose exit_status is not 0, or whose metric is empty, are left out (and counted on
stderr). Rows that share the x and series value while another axis varies are refused: name that
axis with --where or --series, or ask for their mean with --average. Axis labels carry units
derived from the column names (bytes, entries, Gb/s, Mpps, ns, fraction, ...); the x axis is
logarithmic when its values span more than two decades (base 2 with IEC labels for sizes). Each
line is labelled with its axis and value. Exit codes as hcasim: 0 ok, 2 bad input, 3 internal
error.
"""

import argparse
import csv
import json
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


def short_name(column):
    """A dotted path's last two names, list indices and top-level sections left out:
    "qpc_cache.entries", "pcie.gen", "page_size" (for workloads.0.page_size)."""
    parts = [p for p in column.split(".") if not p.isdigit()][-2:]
    if len(parts) == 2 and parts[0] in ("workloads", "defaults", "nodes", "program", "fabric"):
        parts = parts[1:]
    return ".".join(parts) or column


def sweep_axes(csv_path, header):
    """The axis columns, from results.jsonl beside the csv (its rows name their axes); None
    when there is none to read."""
    jsonl = os.path.join(os.path.dirname(os.path.abspath(csv_path)), "results.jsonl")
    try:
        with open(jsonl) as f:
            first = f.readline()
        axes = set(json.loads(first).get("axes", {})) if first.strip() else None
    except (OSError, ValueError):
        return None
    return axes if axes and axes <= set(header) else None


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
    ap.add_argument("-o", "--out", required=True, help="output file: .png, .svg or .pdf")
    ap.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                    help="keep only rows where COLUMN equals VALUE (repeatable)")
    ap.add_argument("--title", help="plot title (default: the metric against the axis)")
    ap.add_argument("--xlabel", help="x axis label (default: the axis with its unit)")
    ap.add_argument("--ylabel", help="y axis label (default: the metric with its unit)")
    ap.add_argument("--ymin", type=float, help="lower end of the y axis, e.g. 0")
    ap.add_argument("--ymax", type=float, help="upper end of the y axis")
    ap.add_argument("--average", action="store_true",
                    help="average rows that share x and series value while other axes vary")
    scale = ap.add_mutually_exclusive_group()
    scale.add_argument("--logx", action="store_true", help="logarithmic x axis")
    scale.add_argument("--linx", action="store_true", help="linear x axis")
    ap.add_argument("--logy", action="store_true", help="logarithmic y axis")
    args = ap.parse_args(argv)

    ext = os.path.splitext(args.out)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        fail(f"-o {args.out}: unknown format (expected a .png, .svg or .pdf file)")
    if args.logy and args.ymin is not None and args.ymin <= 0:
        fail(f"--ymin {args.ymin:g} with --logy: a logarithmic axis starts above 0")
    where = []
    for w in args.where:
        if "=" not in w:
            fail(f"--where {w}: expected COLUMN=VALUE")
        where.append(tuple(w.split("=", 1)))
    rows, header = read_rows(args.csv, [args.x, args.y, args.series] + [c for c, _ in where])
    for column, value in where:
        rows = [r for r in rows if r[column] == value or
                (number(r[column]) is not None and number(r[column]) == number(value))]

    groups = {}  # series label -> x value -> [(y, row)], the rows there
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
        groups.setdefault(s, {}).setdefault(x, []).append((y, row))
    if skipped:
        print(f"hcasim plot: left out {skipped} row(s) that failed or lack {args.y}", file=sys.stderr)
    if not groups:
        fail(f"{args.csv}: no row to plot")
    shared = [[row for _, row in point] for g in groups.values() for point in g.values()
              if len(point) > 1]
    if shared:
        named = {args.x, args.y, args.series, "point", "exit_status"} | {c for c, _ in where}
        axes = sweep_axes(args.csv, header)
        varying = [c for c in header if c not in named and (axes is None or c in axes)
                   and any(len({r[c] for r in rs}) > 1 for rs in shared)]
        what = ", ".join(varying) if varying else "another column"
        axis = varying[0] if varying else "AXIS"
        if not args.average:
            fail(f"{args.csv}: {len(shared)} point(s) have several rows with the same "
                 f"{args.x}{' and ' + args.series if args.series else ''}: {what} varies there. "
                 f"Pick one value (--where {axis}=VALUE), draw one line per value "
                 f"(--series {axis}), or average them (--average)")
        print(f"hcasim plot: averaged {len(shared)} point(s) over {what} (--average)",
              file=sys.stderr)
    # series label -> x value -> the mean y of its rows
    means = {s: {x: sum(y for y, _ in point) / len(point) for x, point in g.items()}
             for s, g in groups.items()}

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
    all_x = sorted({x for g in means.values() for x in g})
    for s in sorted(means, key=lambda k: series_keys[k]):
        xs = sorted(means[s])
        ys = [means[s][x] for x in xs]
        label = None
        if args.series:
            value = iec(number(s)) if unit_of(args.series) == "bytes" and number(s) else s
            label = f"{short_name(args.series)} = {value}"
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
    if args.ymin is not None or args.ymax is not None:
        top = args.ymax
        if top is None:  # headroom above the data for the legend, as autoscaling leaves
            highest = max(m for g in means.values() for m in g.values())
            top = highest + 0.15 * (highest - args.ymin) if highest > args.ymin else None
        ax.set_ylim(bottom=args.ymin, top=top)
    ax.set_xlabel(args.xlabel if args.xlabel is not None else label_of(args.x))
    ax.set_ylabel(args.ylabel if args.ylabel is not None else label_of(args.y))
    ax.set_title(args.title or f"{args.y} vs {args.x}" +
                 "".join(f", {c}={v}" for c, v in where))
    ax.grid(True, which="major", alpha=0.3)
    if args.series:
        ax.legend(title=label_of(args.series), fontsize="small")
    fig.tight_layout()
    try:
        # No dates in SVG and PDF: the same results give the same file.
        meta = {".svg": {"Date": None}, ".pdf": {"CreationDate": None, "ModDate": None}}
        fig.savefig(args.out, metadata=meta.get(ext))
    except OSError as e:
        fail(f"cannot write {args.out}: {e.strerror}", 3)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
