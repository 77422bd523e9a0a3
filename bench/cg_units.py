#!/usr/bin/env python3
"""Instructions per WQE by unit, from two callgrind profiles of one scenario (bench/wqe_rate.sh -u).

usage: cg_units.py MANY.cg FEW.cg WQES [ROWS]

MANY.cg and FEW.cg profile the same run with many and with few WQEs; WQES is the difference in
WQEs. Each function's own instructions (callgrind_annotate, exclusive) are charged to the source
file they come from: hcasim's own files by folder and name (model/requester, sim/kernel, ...);
SystemC's library and its headers (sc_time arithmetic, TLM payloads and sockets, the kernel's
process switches) as systemc/tlm; the C library (malloc, memcpy) as libc; code inlined from
standard or Boost headers as the hcasim class whose function it was inlined into
(hdr:requester, ...). Prints the difference per WQE, largest first. Needs callgrind_annotate.
"""
import collections
import re
import subprocess
import sys


def units(path):
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--inclusive=no",
                          path], capture_output=True, text=True, check=True).stdout
    by_unit = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        count = int(m.group(1).replace(",", ""))
        where = m.group(2)
        source = where.split(":")[0]
        function = where[len(source) + 1:]
        # hcasim's own file, however the build named it (tlm/pcie_link.cpp from the build
        # folder, /work/hcasim/sim/kernel.h for a header, ../model/tpt.cpp).
        own = None if source.startswith("/usr/") else \
            re.search(r"(?:^|/)(cli|engine|fabric|host|model|sim|tlm)/(\w+)\.(?:cpp|h)$", source)
        if own:
            unit = own.group(1) + "/" + own.group(2)
        elif re.search(r"libsystemc|/sysc/|tlm_core|tlm_utils", where) or \
                re.match(r"\s*(sc_core|tlm)::", function):
            unit = "systemc/tlm"
        elif re.search(r"libc\.so|/malloc/|/string/|multiarch", where):
            unit = "libc"
        else:
            cls = re.search(r"hcasim::(\w+)::", function)
            unit = "hdr:" + (cls.group(1) if cls else "other")
        by_unit[unit] += count
    return by_unit


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.strip())
    many, few = units(sys.argv[1]), units(sys.argv[2])
    wqes = float(sys.argv[3])
    rows = int(sys.argv[4]) if len(sys.argv) == 5 else 25
    per = {u: (many[u] - few.get(u, 0)) / wqes for u in many}
    total = sum(per.values())
    shown = sorted(per.items(), key=lambda kv: -kv[1])[:rows]
    for unit, n in shown:
        print("  %-28s %8.0f %6.1f %%" % (unit, n, 100 * n / total))
    rest = total - sum(n for _, n in shown)
    print("  %-28s %8.0f %6.1f %%" % ("(the rest)", rest, 100 * rest / total))
    print("  %-28s %8.0f" % ("total", total))


if __name__ == "__main__":
    main()
