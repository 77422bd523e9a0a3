#!/usr/bin/env python3
"""Structure-aware fuzzing of hcasim's input handling.

Takes the bundled scenarios (scenarios/**/*.json), mutates them as a user's mistakes and a
hostile file would (extreme numbers and strings, huge sizes, deep nesting, keys dropped, repeated
or renamed, list items copied or removed, values swapped between places), and feeds each mutant to
`hcasim check` and, for some that pass, to a short `hcasim run` (a stop time of 200 us, hosts of
2 GiB). Every
answer must be one of hcasim's exit codes for an input (0 ok, 1 an expectation failed, 2 bad
input); a signal, exit 3 (internal error, e.g. an exception), a sanitizer report on stderr or a
timeout fails the test, and the mutant is kept in the work folder to reproduce it.

The seed fixes the mutants: the same seed gives the same files on every run.

usage: fuzz_scenarios.py HCASIM SOURCE_ROOT WORK_DIR [--seed N] [--checks N] [--runs N]
                         [--jobs N] [--timeout S]
"""

import argparse
import concurrent.futures
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import time

# Values a mutant puts in place of another: extremes of every JSON type and of hcasim's units.
EXTREME_NUMBERS = [0, 1, -1, 2, 255, 256, 4095, 4097, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1,
                   2**32, 2**53, 2**63 - 1, 2**63, 2**64 - 1, -2**63, 16777216, 10**12, 10**18,
                   0.5, -0.5, 1e-300, 1e308, -1e308]
EXTREME_STRINGS = ["", " ", "x" * 5000, "../../x", "/", ".", "..", "a/b", "\u00e9\u4e2d",
                   "$x", "$", "0x", "0xffffffffffffffff", "0x10000000000000000", "-1", "1e400",
                   "18446744073709551616", "4GiB", "6GiB", "1TiB", "127TiB", "16EiB",
                   "99999999999999999999KiB", "0B", "1.5KiB", "-4KiB", "10ps", "0us", "1e30s",
                   "100000000s", "NaN", "RC", "UD", "UC", "ALL", "\\u0000"]
# Sizes and counts that describe huge work: every one must be refused or cost what it touches.
HUGE_SIZES = ["6GiB", "4GiB", "127TiB", "1TiB", "0xffffffffffffffff", 2**64 - 1, 2**63,
              16777216, "16MiB", 10**9, 10**12]
SIZE_KEYS = {"length", "size", "mr_size", "entries", "iters", "qps", "depth", "tx_depth",
             "memory", "count", "offset", "max_send_wr", "max_recv_wr", "max_sge", "ways",
             "inline_size", "post_list", "threads", "outs", "page_size", "va", "iova"}


def paths(doc, prefix=()):
    """Every (path, value) in the document, containers included."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def put(doc, path, value):
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


def deep(levels, rng):
    v = rng.choice([0, "x", {}, []])
    for _ in range(levels):
        v = [v] if rng.random() < 0.5 else {"k": v}
    return v


class Mutant:
    """A mutated document, or raw text when JSON cannot say it (repeated keys, 1e400)."""

    def __init__(self, doc, text=None, what=""):
        self.doc, self.text, self.what = doc, text, what

    def dump(self):
        return self.text if self.text is not None else json.dumps(self.doc, indent=1)


def mutate(doc, rng):
    doc = copy.deepcopy(doc)
    what = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        all_paths = list(paths(doc))
        path, value = rng.choice(all_paths)
        key = path[-1] if path else None
        r = rng.random()
        if isinstance(key, str) and key in SIZE_KEYS and r < 0.3:
            new = rng.choice(HUGE_SIZES)
            doc = put(doc, path, new)
            what.append(f"{path}: huge {new!r}")
        elif r < 0.45:
            new = rng.choice(EXTREME_NUMBERS)
            doc = put(doc, path, new)
            what.append(f"{path}: number {new!r}")
        elif r < 0.55:
            new = rng.choice(EXTREME_STRINGS)
            doc = put(doc, path, new)
            what.append(f"{path}: string {new[:20]!r}")
        elif r < 0.6:
            new = rng.choice([None, True, False, [], {}, [[]], {"": {}}])
            doc = put(doc, path, new)
            what.append(f"{path}: {new!r}")
        elif r < 0.64:
            levels = rng.choice([10, 100, 255, 256, 300, 3000])
            doc = put(doc, path, deep(levels, rng))
            what.append(f"{path}: nested {levels}")
        elif r < 0.72 and path:
            parent = get(doc, path[:-1])
            del parent[key]
            what.append(f"{path}: dropped")
        elif r < 0.8 and isinstance(value, list) and value:
            item = rng.choice(value)
            times = rng.choice([1, 2, 50])
            for _ in range(times):
                value.insert(rng.randrange(len(value) + 1), copy.deepcopy(item))
            what.append(f"{path}: item copied {times}x")
        elif r < 0.86 and path and isinstance(key, str):
            parent = get(doc, path[:-1])
            new_key = rng.choice([key + "x", key[:-1], key.upper(), "", "name", "op", "$" + key])
            if new_key not in parent:
                parent[new_key] = parent.pop(key)
                what.append(f"{path}: renamed {new_key!r}")
        elif r < 0.93:
            other_path, other = rng.choice(all_paths)
            doc = put(doc, path, copy.deepcopy(other))
            what.append(f"{path}: value of {other_path}")
        else:
            break
    text = json.dumps(doc, indent=1)
    r = rng.random()
    if r < 0.04 and isinstance(doc, dict) and doc:
        # A key written twice, which JSON text can say and a dict cannot.
        k = rng.choice(list(doc))
        text = "{" + json.dumps(k) + ": 1, " + text.lstrip()[1:]
        what.append(f"repeated key {k!r}")
        return Mutant(doc, text, "; ".join(what))
    if r < 0.08:
        numbers = [i for i, c in enumerate(text) if c.isdigit() and (i == 0 or not text[i - 1].isalnum())]
        if numbers:
            at = rng.choice(numbers)
            end = at
            while end < len(text) and (text[end].isdigit() or text[end] in ".eE+-"):
                end += 1
            new = rng.choice(["1e400", "-1e400", "9" * 400, "1e-400"])
            text = text[:at] + new + text[end:]
            what.append(f"number at byte {at} -> {new[:10]}")
            return Mutant(doc, text, "; ".join(what))
    if r < 0.1:
        cut = rng.randrange(len(text))
        what.append(f"cut at byte {cut}")
        return Mutant(doc, text[:cut], "; ".join(what))
    return Mutant(doc, None, "; ".join(what))


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer", "AddressSanitizer:")


def judge(cmd, timeout, env):
    """(None, exit code) when hcasim answered as it should, else (why not, None)."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return f"no answer within {timeout} s", None
    took = time.monotonic() - start
    err = p.stderr.decode("utf-8", "replace")
    for mark in SANITIZER_MARKS:
        if mark in err:
            at = err.index(mark)
            return "sanitizer: " + err[at:at + 400], None
    if p.returncode < 0:
        return f"killed by signal {-p.returncode}: {err[-400:]}", None
    if p.returncode not in (0, 1, 2):
        return f"exit {p.returncode} after {took:.1f} s: {err[-400:]}", None
    return None, p.returncode


def load_corpus(root):
    corpus = []
    for folder, _, files in sorted(os.walk(os.path.join(root, "scenarios"))):
        for f in sorted(files):
            if not f.endswith(".json") or f.endswith("schema.json"):
                continue
            path = os.path.join(folder, f)
            try:
                doc = json.load(open(path))
            except ValueError:
                continue  # scenarios/invalid holds files that are not JSON on purpose
            if isinstance(doc, dict) and isinstance(doc.get("base"), str):
                # A sweep: its base relative to where the mutant is written.
                doc["base"] = os.path.normpath(os.path.join(folder, doc["base"]))
            corpus.append((os.path.relpath(path, root), doc))
    return corpus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hcasim")
    ap.add_argument("root")
    ap.add_argument("work")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--checks", type=int, default=600, help="mutants given to `hcasim check`")
    ap.add_argument("--runs", type=int, default=40, help="of those that pass, how many to run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60, help="seconds per hcasim process")
    args = ap.parse_args()
    sys.setrecursionlimit(100000)  # the deep mutants are dumped and copied recursively

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    env = dict(os.environ)
    # Under the sanitizers an allocation of more than 4 GiB is reported (memory exhaustion).
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", "detect_leaks=0"),
                                                 "max_allocation_size_mb=4096"]))
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")

    rng = random.Random(args.seed)
    corpus = load_corpus(args.root)
    mutants = []
    for i in range(args.checks):
        name, doc = corpus[rng.randrange(len(corpus))]
        m = mutate(doc, rng)
        path = os.path.join(args.work, f"m{i:04d}.json")
        with open(path, "w") as f:
            f.write(m.dump())
        mutants.append((path, name, m.what, isinstance(m.doc, dict) and "base" not in m.doc))
    print(f"fuzz: {len(corpus)} scenarios, seed {args.seed}, {len(mutants)} mutants", flush=True)

    failures = []

    def check(entry):
        return entry, judge([args.hcasim, "check", entry[0]], args.timeout, env)

    passed = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for entry, (problem, code) in pool.map(check, mutants):
            if problem:
                failures.append(("check", entry, problem))
            elif code == 0 and entry[3]:
                passed.append(entry)
    # Runs: a deterministic choice among the mutants `check` accepts.
    run_rng = random.Random(args.seed + 1)
    to_run = run_rng.sample(passed, min(args.runs, len(passed)))

    def run(entry):
        path = entry[0]
        out = path[:-5] + ".out"
        # Simulated memory is real memory once touched: hosts of 2 GiB bound what a run can
        # fill, as a user's host.memory does.
        cmd = [args.hcasim, "run", path, "--quiet", "-o", out, "--set", "stop=200us",
               "--set", "defaults.host.memory=2GiB"]
        nodes = json.load(open(path)).get("nodes")
        for node, cfg in (nodes.items() if isinstance(nodes, dict) else []):
            if isinstance(cfg, dict) and isinstance(cfg.get("host"), dict) and "memory" in cfg["host"]:
                cmd += ["--set", f"nodes.{node}.host.memory=2GiB"]
        problem, _ = judge(cmd, args.timeout, env)
        if not problem:
            shutil.rmtree(out, ignore_errors=True)
        return entry, problem

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for entry, problem in pool.map(run, to_run):
            if problem:
                failures.append(("run", entry, problem))
    print(f"fuzz: {len(mutants)} checked ({len(passed)} accepted and runnable), {len(to_run)} run",
          flush=True)
    for kind, (path, name, what, _), problem in failures:
        print(f"FAIL {kind} {path} (from {name}; {what}): {problem}")
    if failures:
        print(f"fuzz: {len(failures)} failures; the mutants are kept in {args.work}")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
