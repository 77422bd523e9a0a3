#!/usr/bin/env python3
"""Regenerates the reference tables of the docs from `hcasim schema`, so they stay in step with
the code: every node parameter (docs/calibration.md), every program op and every workload type
with its fields (docs/scenarios.md).

The tables live between marker lines in the markdown files:
    <!-- BEGIN generated: NAME (docs/tools/gen_reference.py) -->
    ...
    <!-- END generated: NAME -->
and everything between the markers is replaced.

Which ops this version executes is read from engine/program.cpp and engine/program_*.cpp (the
`op == "..."` branches of program_runner::execute and the op groups it calls); the others are accepted by the loader but return ENOSYS at run time.

usage: docs/tools/gen_reference.py [--hcasim build/hcasim] [--program engine/program.cpp] [--check]
  --check   exit 1 if a file would change (for CI), write nothing
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def leaf_type(p):
    """A short type name for one schema property."""
    if "$ref" in p:
        return p["$ref"].split("/")[-1]
    alts = p.get("anyOf") or p.get("oneOf")
    if alts:
        names = [leaf_type(a) for a in alts if a.get("$ref") != "#/$defs/var"]
        return " or ".join(n for n in names if n) or "$var"
    t = p.get("type")
    if "enum" in p:
        return " | ".join("`%s`" % e for e in p["enum"])
    if "const" in p:
        return "`%s`" % p["const"]
    if t == "array":
        return "list of " + leaf_type(p.get("items", {}))
    if t == "object":
        return "object"
    if t in ("integer", "number"):
        lo, hi = p.get("minimum"), p.get("maximum")
        if lo is not None and hi is not None:
            return "%s %s..%s" % (t, num(lo), num(hi))
        return t
    return t or ""


def fmt_default(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "`%s`" % str(v).lower()
    if isinstance(v, str):
        return "`\"%s\"`" % v
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return "`%s`" % json.dumps(v)


def num(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e18:
        v = int(v)
    if isinstance(v, int) and v >= 1024 and v & (v - 1) == 0:
        return "2^%d" % (v.bit_length() - 1)
    return "%s" % v


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


# ---- node parameters -------------------------------------------------------------------------

def walk_params(obj, prefix, rows):
    for key, p in obj.get("properties", {}).items():
        path = prefix + key
        if p.get("type") == "object" and "properties" in p and "x-unit" not in p:
            walk_params(p, path + ".", rows)
            continue
        desc = p.get("description", "")
        desc = re.sub(r"( \[[^\]]*\])? Source: .*$", "", desc)  # the schema appends unit and source
        desc = re.sub(r" \[[^\]]*\]$", "", desc)
        unit = p.get("x-unit", "")
        if not unit and p.get("type") == "boolean":
            unit = "flag"
        if "enum" in p:
            unit = "one of " + ", ".join("`%s`" % e for e in p["enum"])
        rng = ""
        if "minimum" in p or "maximum" in p:
            rng = "%s..%s" % (num(p.get("minimum", 0)), num(p.get("maximum", float("inf"))))
        else:
            for alt in p.get("oneOf", []):
                if "minimum" in alt:
                    rng = "≥ %s" % num(alt["minimum"])
        rows.append((path, fmt_default(p.get("default")), unit, rng, desc, p.get("x-source", "")))


def params_table(schema):
    defs = schema["$defs"]
    rows = []
    walk_params(defs["node_config"], "", rows)
    out = ["| parameter | default | unit | range | description | source |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| `%s` | %s | %s | %s | %s | %s |" % tuple(cell(x) for x in (r[0], r[1], r[2], r[3], r[4], r[5])))
    out.append("")
    out.append("Fabric links (`fabric.links[]`, besides `a` and `b`):")
    out.append("")
    out.append("| parameter | default | unit | range | description | source |")
    out.append("|---|---|---|---|---|---|")
    link_rows = []
    walk_params({"properties": {k: v for k, v in defs["link"]["properties"].items() if k not in ("a", "b")}},
                "", link_rows)
    for r in link_rows:
        out.append("| `%s` | %s | %s | %s | %s | %s |" % tuple(cell(x) for x in r))
    return "\n".join(out)


# ---- ops and workloads ------------------------------------------------------------------------

COMMON_STEP_KEYS = {"op", "node", "process", "expect", "save"}


def field_rows(props, required, prefix=""):
    rows = []
    for key, p in props.items():
        if not prefix and key in COMMON_STEP_KEYS | {"type"}:
            continue
        name = prefix + key
        typ = leaf_type(p)
        rows.append((name, "yes" if key in required else "", typ, fmt_default(p.get("default")),
                     p.get("description", "")))
        inner = None
        for alt in p.get("anyOf", []) + [p]:
            if alt.get("type") == "object" and "properties" in alt:
                inner = alt
            if alt.get("type") == "array":
                it = alt.get("items", {})
                for a2 in it.get("anyOf", []) + [it]:
                    if a2.get("type") == "object" and "properties" in a2:
                        inner = a2
                        name += "[]"
        if inner is not None:
            rows += field_rows(inner["properties"], set(inner.get("required", [])), name + ".")
    return rows


PROGRAM_CPP = os.path.join(ROOT, "engine", "program.cpp")


def executed_ops():
    """The ops program.cpp and its companions (engine/program_*.cpp) execute."""
    folder = os.path.dirname(PROGRAM_CPP)
    files = [PROGRAM_CPP] + sorted(os.path.join(folder, f) for f in os.listdir(folder)
                                   if f.startswith("program_") and f.endswith(".cpp"))
    src = "".join(open(f, encoding="utf-8").read() for f in files)
    return set(re.findall(r'op == "([a-z_]+)"', src))


def ops_table(schema):
    done = executed_ops()
    out = []
    summary = ["| op | what | this version |", "|---|---|---|"]
    detail = []
    for step in schema["$defs"]["step"]["oneOf"]:
        props = step["properties"]
        op = props["op"]["const"]
        status = "runs" if op in done else "**ENOSYS** (accepted by `check`, fails at run time)"
        summary.append("| [`%s`](#op-%s) | %s | %s |" % (op, op, cell(step.get("description", "")), status))
        detail.append('<a id="op-%s"></a>' % op)
        detail.append("#### `%s`" % op)
        detail.append("")
        detail.append(step.get("description", "") + ("" if op in done else " — *returns ENOSYS in this version*."))
        detail.append("")
        rows = field_rows(props, set(step.get("required", [])))
        if rows:
            detail.append("| field | required | type | default | description |")
            detail.append("|---|---|---|---|---|")
            for r in rows:
                detail.append("| `%s` | %s | %s | %s | %s |" % tuple(cell(x) for x in r))
        else:
            detail.append("No fields besides `node`, `process`, `expect`, `save`.")
        detail.append("")
    out += summary + [""] + detail
    return "\n".join(out).rstrip()


def workloads_table(schema):
    out = []
    for w in schema["$defs"]["workload"]["oneOf"]:
        props = w["properties"]
        t = props["type"]["const"]
        out.append("#### `%s`" % t)
        out.append("")
        out.append(w.get("description", ""))
        out.append("")
        out.append("| field | required | type | default | description |")
        out.append("|---|---|---|---|---|")
        for r in field_rows(props, set(w.get("required", []))):
            out.append("| `%s` | %s | %s | %s | %s |" % tuple(cell(x) for x in r))
        out.append("")
    return "\n".join(out).rstrip()


# ---- splicing ---------------------------------------------------------------------------------

def splice(text, name, body):
    begin = "<!-- BEGIN generated: %s (docs/tools/gen_reference.py) -->" % name
    end = "<!-- END generated: %s -->" % name
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0:
        sys.exit("gen_reference.py: markers for %s not found" % name)
    return text[: i + len(begin)] + "\n" + body + "\n" + text[j:]


def main():
    global PROGRAM_CPP
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcasim", default=os.path.join(ROOT, "build", "hcasim"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--program", default=PROGRAM_CPP, help="engine/program.cpp to read the executed ops from")
    args = ap.parse_args()
    PROGRAM_CPP = args.program
    schema = json.loads(subprocess.run([args.hcasim, "schema"], check=True, capture_output=True, text=True).stdout)
    jobs = {
        "docs/calibration.md": {"parameters": params_table(schema)},
        "docs/scenarios.md": {"ops": ops_table(schema), "workloads": workloads_table(schema)},
    }
    stale = []
    for rel, blocks in jobs.items():
        path = os.path.join(ROOT, rel)
        text = open(path, encoding="utf-8").read()
        new = text
        for name, body in blocks.items():
            new = splice(new, name, body)
        if new != text:
            stale.append(rel)
            if not args.check:
                open(path, "w", encoding="utf-8").write(new)
    if args.check and stale:
        print("out of date: " + ", ".join(stale) + " (run docs/tools/gen_reference.py)")
        return 1
    for rel in stale:
        print("updated " + rel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
