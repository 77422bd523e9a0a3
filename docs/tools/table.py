#!/usr/bin/env python3
"""Prints a markdown table of run results, so the tables in the docs are the output of a command
(checked by tests/docs/doc_test.py) rather than numbers copied by hand.

Input: a sweep's results.csv (one row per point), or stats.json files (one row per file; keys
flattened to dotted paths as in results.csv, e.g. workloads.0.mops). Cells, row and column
labels are Python format strings whose fields are expressions over the row `r` (a dict from
column name to value; JSON values decoded), e.g. "{r['workloads.0.mops']:.1f}".

  table.py results.csv --rows "{len(r['workloads.0.nodes']) - 1}" \
      --cols "{r['nodes.server.hca.qpc_cache.entries']} entries" --corner "client machines" \
      --cell "{r['workloads.0.aggregate.mops.sum']:.1f}"
  table.py a/stats.json b/stats.json --cols "{r['config.nodes.a.pcie.gen']}" \
      --metric "Gb/s={r['workloads.0.gbps']:.1f}" --metric "PCIe util={r['nodes.a.hca.pcie.down_utilization']:.2f}"

--where "r['defaults.pcie.lanes'] == 16" keeps some rows. With --rows and --cols the rows are pivoted: one line per distinct row label, one column per
distinct column label, in order of first appearance. With --cols and --metric instead, each
metric is a line ("NAME=FORMAT") and each row a column.
"""
import argparse
import csv
import json
import re
import sys

FIELD = re.compile(r"\{((?:[^{}:'\"]|'[^']*'|\"[^\"]*\")+)(?::([^{}]*))?\}")
ENV = {"len": len, "round": round, "int": int}  # the names of cell and --where expressions


def fill(template, r):
    def one(m):
        value = eval(m.group(1), ENV, {"r": r})
        return format(value, m.group(2) or "")
    return FIELD.sub(one, template)


def flatten(value, prefix, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value


def decode(text):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def load(paths):
    rows = []
    for path in paths:
        if path.endswith(".csv"):
            with open(path, newline="") as f:
                rows += [{k: decode(v) for k, v in row.items()} for row in csv.DictReader(f)]
        else:
            row = {}
            with open(path) as f:
                flatten(json.load(f), "", row)
            rows.append(row)
    return rows


def markdown(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", help="results.csv or stats.json files")
    p.add_argument("--rows", help="row label (format string over r)")
    p.add_argument("--cols", required=True, help="column label (format string over r)")
    p.add_argument("--cell", help="cell text, with --rows")
    p.add_argument("--metric", action="append", default=[], help="NAME=FORMAT, a line each")
    p.add_argument("--corner", default="", help="the header's first cell")
    p.add_argument("--where", action="append", default=[],
                   help="keep the rows where this Python expression over r is true (repeatable)")
    a = p.parse_args()
    rows = [r for r in load(a.inputs)
            if all(eval(w, ENV, {"r": r}) for w in a.where)]
    if a.rows:
        if not a.cell or a.metric:
            p.error("--rows takes --cell (and no --metric)")
        row_labels, col_labels, cells = [], [], {}
        for r in rows:
            rl, cl = fill(a.rows, r), fill(a.cols, r)
            row_labels += [rl] if rl not in row_labels else []
            col_labels += [cl] if cl not in col_labels else []
            cells[rl, cl] = fill(a.cell, r)
        lines = [[rl] + [cells.get((rl, cl), "") for cl in col_labels] for rl in row_labels]
        print(markdown([a.corner] + col_labels, lines))
    else:
        if not a.metric:
            p.error("give --rows and --cell, or --metric")
        metrics = [m.split("=", 1) for m in a.metric]
        print(markdown([a.corner] + [fill(a.cols, r) for r in rows],
                       [[name] + [fill(fmt, r) for r in rows] for name, fmt in metrics]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
