#!/usr/bin/env python3
"""The docs tell the truth: the commands shown in README.md, docs/*.md and traces/README.md are
run and what they print is compared with the page, and every repository file the pages name
exists.

A page marks a command whose output it shows with an HTML comment (invisible when rendered) right
before the output:

    <!-- doc-test: build/hcasim run scenarios/quickstart.json
         mask: in [0-9.]+ s wall -->
    ```
    ...the output, as the page shows it...
    ```

Every line of the comment but `mask:` lines is a shell command; they run in order in a scratch
folder that has the repository's folders and `build/hcasim` (also on PATH as `hcasim`), and their
stdout (add `2>&1` to a command for its stderr) must be the next fenced block, or the next markdown table when the
output is one. `mask: REGEX` (Python syntax) replaces what it matches, in the page and in the
output alike, by `<masked>`: for wall-clock times, absolute paths and commits, never for a
simulated number. Lines are compared exactly, but for trailing spaces; lines of the page that
start with `$ ` show the reader a command and are not output.

usage: doc_test.py HCASIM SOURCE_DIR [PAGE.md ...]   (default: every page)
"""
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!-- doc-test:(.*?)-->", re.S | re.M)
FOLDERS = ("scenarios", "traces", "bench", "docs", "tools", "tests", "engine", "model", "host",
           "tlm", "sim", "cli", "fabric", "cmake", "apps")
# The top-level entries the scratch folder links to, and that the paths a page names start with.
TOP_LEVEL = FOLDERS + ("README.md", "build.sh", "CMakeLists.txt")
# Repository paths a page names in backticks, checked for existence (links are LINK's).
PATH = re.compile(r"`(?:\.\./)*((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_])(?:#[^`]*)?`"
                  % "|".join(TOP_LEVEL))
# Markdown links and images: [text](target) and ![alt](target), relative to the page.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages(source):
    return [os.path.join(source, "README.md")] + sorted(
        glob.glob(os.path.join(source, "docs", "*.md"))) + [os.path.join(source, "traces", "README.md")]


def line_of(text, pos):
    """The line number (from 1) of position pos of text."""
    return text[:pos].count("\n") + 1


def expected_after(text, pos):
    """The fenced block or markdown table that follows position pos."""
    rest = text[pos:].lstrip("\n")
    if rest.startswith("```"):
        body = rest.split("\n", 1)[1]
        return body[:body.index("```")].rstrip("\n").split("\n")
    lines = []
    for line in rest.split("\n"):
        if not line.startswith("|"):
            break
        lines.append(line)
    if not lines:
        raise ValueError("a doc-test marker is followed by neither a fenced block nor a table")
    return lines


def scratch(source, hcasim):
    tmp = tempfile.mkdtemp(prefix="doc_test_")
    for name in TOP_LEVEL:
        if os.path.exists(os.path.join(source, name)):
            os.symlink(os.path.join(source, name), os.path.join(tmp, name))
    os.makedirs(os.path.join(tmp, "build"))
    os.symlink(os.path.abspath(hcasim), os.path.join(tmp, "build", "hcasim"))
    return tmp


def run_marker(body, tmp):
    commands, masks = [], []
    for line in body.strip().split("\n"):
        line = line.strip()
        if line.startswith("mask:"):
            masks.append(re.compile(line[5:].strip()))
        elif line:
            commands.append(line)
    env = dict(os.environ, PATH=os.path.join(tmp, "build") + os.pathsep + os.environ["PATH"],
               TERM="dumb")
    out = ""
    for cmd in commands:
        done = subprocess.run(cmd, shell=True, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, stdin=subprocess.DEVNULL)
        out += done.stdout
    return commands, masks, out.rstrip("\n").split("\n")


def normalise(lines, masks):
    result = []
    for line in lines:
        for m in masks:
            line = m.sub("<masked>", line)
        result.append(line.rstrip())
    return result


def check_page(page, source, tmp):
    problems, count = [], 0
    text = open(page).read()
    rel = os.path.relpath(page, source)
    for m in MARKER.finditer(text):
        line_no = line_of(text, m.start())
        try:
            want = expected_after(text, m.end())
        except ValueError as e:
            problems.append(f"{rel}:{line_no}: {e}")
            continue
        commands, masks, got = run_marker(m.group(1), tmp)
        want = normalise([w for w in want if not w.startswith("$ ")], masks)
        got = normalise(got, masks)
        count += 1
        if want != got:
            diff = "\n".join(difflib.unified_diff(want, got, "page", "output", lineterm="", n=1))
            problems.append(f"{rel}:{line_no}: `{' && '.join(commands)}` prints something else "
                            f"than the page shows:\n{diff}")
    for m in PATH.finditer(text):
        path = m.group(1)
        if "*" in path or "<" in path:
            continue
        if not os.path.exists(os.path.join(source, path)):
            line_no = line_of(text, m.start())
            problems.append(f"{rel}:{line_no}: names {path}, which is not in the repository")
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"[a-z]+:", target):
            continue
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), target))):
            line_no = line_of(text, m.start())
            problems.append(f"{rel}:{line_no}: links to {target}, which is not there")
    return problems, count


def main():
    hcasim, source = sys.argv[1], os.path.abspath(sys.argv[2])
    chosen = [os.path.abspath(p) for p in sys.argv[3:]] or pages(source)
    tmp = scratch(source, hcasim)
    problems, count = [], 0
    try:
        for page in chosen:
            p, c = check_page(page, source, tmp)
            problems += p
            count += c
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the links, not what they point to
    for p in problems:
        print(p + "\n")
    print(f"{count} commands' output checked against {len(chosen)} pages; "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
