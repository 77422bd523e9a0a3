#!/usr/bin/env python3
"""The GTKWave save files in traces/gtkw/ still fit the scenarios they are for: each is run as its
header says (`[*] run:`), and every signal the save file shows must be a signal of that run's
waves.vcd; groups open and close in order; the `[*] open:` command names the same dump. A renamed
unit or a scenario that lost a node fails here instead of leaving GTKWave with missing rows.

usage: gtkw_test.py HCASIM SOURCE_DIR
"""
import glob
import os
import shlex
import subprocess
import sys
import tempfile


def vcd_signals(path):
    """Hierarchical names of the $var declarations ($scope levels joined with dots)."""
    names, scope = set(), []
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
            names.add(".".join(scope + [tokens[i + 4]]))
            i += 6
        elif t == "$enddefinitions":
            break
        else:
            i += 1
    return names


def check(hcasim, source, path, tmp):
    problems = []
    header, shown, groups = {}, [], []
    flags = None
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        if line.startswith("[*] ") and ":" in line:
            key, value = line[4:].split(":", 1)
            header[key.strip()] = value.strip()
        elif line.startswith("["):
            continue
        elif line.startswith("@"):
            flags = int(line[1:], 16)
        elif line.startswith("-"):
            label = line[1:]
            if flags & 0x800000:  # a group's start
                groups.append(label)
            elif flags & 0x1000000:  # its end
                if not groups or groups[-1] != label:
                    problems.append(f"group end '{label}' does not close the open group {groups[-1:]}")
                else:
                    groups.pop()
            elif label or not flags & 0x20000:  # blank rows stretch an analog signal
                problems.append(f"label '{label}' is neither a group nor an analog row")
        elif line:
            shown.append(line)
    if groups:
        problems.append(f"groups left open: {groups}")
    for key in ("scenario", "run", "open"):
        if key not in header:
            problems.append(f"no '[*] {key}:' line in the header")
    if problems:
        return problems
    run = shlex.split(header["run"])
    if run[:2] != ["build/hcasim", "run"] or run[2] != header["scenario"] or "--vcd" not in run:
        return [f"'[*] run: {header['run']}' does not run {header['scenario']} with --vcd"]
    outdir = run[run.index("-o") + 1]
    if shlex.split(header["open"]) != ["gtkwave", f"{outdir}/waves.vcd", path[len(source) + 1:]]:
        problems.append(f"'[*] open: {header['open']}' is not 'gtkwave {outdir}/waves.vcd' and this file")
    if f'[dumpfile] "{outdir}/waves.vcd"' not in lines:
        problems.append(f"[dumpfile] is not \"{outdir}/waves.vcd\"")
    out = os.path.join(tmp, os.path.basename(path))
    args = [hcasim] + run[1:run.index("-o")] + run[run.index("-o") + 2:] + ["-o", out, "--quiet"]
    done = subprocess.run(args, cwd=source, capture_output=True, text=True)
    if done.returncode != 0:
        return problems + [f"{' '.join(args)} exited {done.returncode}: {done.stderr}"]
    signals = vcd_signals(os.path.join(out, "waves.vcd"))
    for name in shown:
        if name not in signals:
            problems.append(f"shows '{name}', which the run's waves.vcd does not have")
    if len(set(shown)) != len(shown):
        problems.append("shows a signal twice")
    if not shown:
        problems.append("shows no signal")
    return problems


def main():
    hcasim, source = sys.argv[1], os.path.abspath(sys.argv[2])
    files = sorted(glob.glob(os.path.join(source, "traces", "gtkw", "*.gtkw")))
    if not files:
        print("no traces/gtkw/*.gtkw")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            problems = check(hcasim, source, path, tmp)
            for p in problems:
                print(f"{os.path.relpath(path, source)}: {p}")
            failed += bool(problems)
            if not problems:
                print(f"{os.path.relpath(path, source)}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
