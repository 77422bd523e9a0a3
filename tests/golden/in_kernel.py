#!/usr/bin/env python3
"""The simulated results do not depend on the kernel events a run takes.

Engine threads normally pass CPU time ahead of the SystemC kernel when nothing else runs
meanwhile (sim/kernel.h, pass_time), which saves most kernel events; with
HCASIM_THREADS_IN_KERNEL set they always wait in the kernel instead, a very different history of
kernel events for the same simulation. This runs every bundled scenario that way and checks that
its simulated results still match tests/golden/results.json (the digests scenario.golden pins):
threads due at the same picosecond must run in the calendar's order, never in the order of
SystemC's timed-event heap, which depends on everything the kernel did before.

usage: in_kernel.py HCASIM SOURCE_DIR OUT_DIR [-j JOBS]
"""
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402  (tests/golden/results.py: the scenario list and the digest)


def run(hcasim, src, out, name):
    env = dict(os.environ, HCASIM_THREADS_IN_KERNEL="1")
    proc = subprocess.run([hcasim, "run", os.path.join(src, "scenarios", name + ".json"),
                           "--quiet", "-o", os.path.join(out, name)],
                          env=env, capture_output=True, text=True)
    return name, proc


def main():
    args = sys.argv[1:]
    jobs = 2
    if "-j" in args:
        i = args.index("-j")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    hcasim, src, out = args
    with open(os.path.join(src, "tests", "golden", "results.json")) as f:
        golden = json.load(f)
    bad = 0
    names = sorted(results.scenarios(src))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, proc in pool.map(lambda n: run(hcasim, src, out, n), names):
            # The run must pass (its expect blocks hold) and compute what scenario.golden pins.
            path = os.path.join(out, name, "stats.json")
            if proc.returncode != 0 or not os.path.exists(path):
                print("%s: exit %d with threads in the kernel\n%s" %
                      (name, proc.returncode, proc.stderr.strip()[-2000:]))
                bad += 1
                continue
            d, sim = results.digest(path)
            if name not in golden:
                print("%s: not pinned in tests/golden/results.json" % name)
                bad += 1
            elif d != golden[name]["digest"]:
                print("%s: simulated results differ with threads in the kernel (sim_time_ns "
                      "%s -> %s)" % (name, golden[name]["sim_time_ns"], sim))
                bad += 1
    if bad:
        print("%d of %d scenarios depend on the kernel events the run takes" % (bad, len(names)))
        return 1
    print("%d scenarios: the same results with every thread waiting in the kernel" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
