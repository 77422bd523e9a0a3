#!/usr/bin/env python3
"""Pins the simulated results of every bundled scenario.

Each scenario test (`scenario.*` in ctest) leaves its stats.json under TEST_OUT/<scenario path>.
This script reduces each to what the simulation computed - everything except the run's own
costs (wall time, kernel events, simulator memory, the version string) and the echoed configuration - and compares
a SHA-256 of its canonical JSON with tests/golden/results.json. A change to the simulator's
speed or structure must leave every digest as it was; a change that moves simulated results on
purpose updates the file (--update) and says in its commit what moved and why.

usage: results.py SOURCE_DIR TEST_OUT            check (exit 1 on any difference)
       results.py SOURCE_DIR TEST_OUT --update   rewrite tests/golden/results.json
"""
import hashlib
import json
import os
import sys

# Costs of the run and how it was asked for (paths, command line, commit), not results of the
# simulation.
RUN_KEYS = {"hcasim_version", "wall_time_s", "events", "config", "run", "interrupted"}
WORKLOAD_RUN_KEYS = {"events", "events_per_op"}


def scenarios(src):
    root = os.path.join(src, "scenarios")
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".json") or f.endswith("schema.json"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[: -len(".json")]
            if rel.startswith(("sweeps" + os.sep, "invalid" + os.sep)):
                continue
            yield rel.replace(os.sep, "/")


def reduce(stats):
    out = {k: v for k, v in stats.items() if k not in RUN_KEYS}
    # The simulator's own memory for simulated bytes is a cost of the run, too.
    out["nodes"] = {n: {**node, "host": {k: v for k, v in node.get("host", {}).items()
                                          if k != "sim_memory_bytes"}}
                    for n, node in stats.get("nodes", {}).items()}
    out["expect"] = [{k: v for k, v in e.items()
                      if not (k == "value" and str(e.get("stat", "")).endswith("sim_memory_bytes"))}
                     for e in stats.get("expect", [])]
    out["workloads"] = [{k: v for k, v in w.items() if k not in WORKLOAD_RUN_KEYS}
                        for w in stats.get("workloads", [])]
    return out


def digest(path):
    with open(path) as f:
        stats = json.load(f)
    text = json.dumps(reduce(stats), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), stats.get("sim_time_ns")


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--update"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src, out, update = sys.argv[1], sys.argv[2], len(sys.argv) == 4
    golden_path = os.path.join(src, "tests", "golden", "results.json")
    now = {}
    missing = []
    for name in sorted(scenarios(src)):
        path = os.path.join(out, name, "stats.json")
        if not os.path.exists(path):
            missing.append(name)
            continue
        d, sim = digest(path)
        now[name] = {"digest": d, "sim_time_ns": sim}
    if missing:
        print("no stats.json for: " + ", ".join(missing) + " (run the scenario tests first)",
              file=sys.stderr)
        return 1
    if update:
        with open(golden_path, "w") as f:
            json.dump(now, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote %s: %d scenarios" % (golden_path, len(now)))
        return 0
    with open(golden_path) as f:
        golden = json.load(f)
    bad = 0
    for name in sorted(set(now) | set(golden)):
        if name not in golden:
            print("%s: new scenario, not pinned yet" % name)
            bad += 1
        elif name not in now:
            print("%s: pinned but no longer bundled" % name)
            bad += 1
        elif now[name]["digest"] != golden[name]["digest"]:
            print("%s: simulated results moved (sim_time_ns %s -> %s)" %
                  (name, golden[name]["sim_time_ns"], now[name]["sim_time_ns"]))
            bad += 1
    if bad:
        print("%d of %d scenarios differ from tests/golden/results.json; if the change is "
              "meant, rerun with --update and say in the commit what moved" % (bad, len(now)))
        return 1
    print("%d scenarios: simulated results as pinned" % len(now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
