#!/usr/bin/env python3
"""Unmodified verbs programs on the simulated HCA (docs/apps.md), as ctest runs them (label apps).

    apps_test.py HCASIM SOURCE_DIR CASE

Each case starts `hcasim serve` on a socket in a temporary folder, runs Debian's programs through
`hcasim exec`, checks what they print and what the server's stats.json says, and stops the
server. Every process has a timeout: a hang fails the case, it never blocks the suite.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 120  # seconds for any one program


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, hcasim, scenario, tmp, *extra):
        self.hcasim = hcasim
        self.sock = os.path.join(tmp, "hcasim.sock")
        self.out = os.path.join(tmp, "out")
        self.log = open(os.path.join(tmp, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [hcasim, "serve", scenario, "--socket", self.sock, "-o", self.out, *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(3000):
            if os.path.exists(self.sock):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        self.stop()
        fail("hcasim serve did not start:\n" + self.text())

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def exec_cmd(self, node, *command):
        return [self.hcasim, "exec", "--socket", self.sock, "--node", node, "--", *command]

    def run(self, node, *command, timeout=TIMEOUT):
        p = subprocess.run(self.exec_cmd(node, *command), capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def start(self, node, *command):
        return subprocess.Popen(self.exec_cmd(node, *command), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def stats(self):
        with open(os.path.join(self.out, "stats.json")) as f:
            return json.load(f)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def finish(procs, timeout=TIMEOUT):
    """Waits for programs started together; kills them all when one overstays."""
    results = []
    deadline = time.time() + timeout
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail("a program did not finish within %d s" % timeout)
        results.append((p.returncode, out, err))
    return results


def wait_listening(port, proc, timeout=60):
    """Waits until a TCP port listens (read from /proc/net/tcp*, so no connection is spent)."""
    want = ":%04X" % port
    deadline = time.time() + timeout
    while time.time() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        cols = line.split()
                        if cols[1].endswith(want) and cols[3] == "0A":
                            return
            except OSError:
                pass
        if proc.poll() is not None:
            out, err = proc.communicate()
            fail("the server program exited before it listened:\n%s%s" % (out, err))
        time.sleep(0.02)
    proc.kill()
    fail("the server program did not listen on port %d" % port)


def pingpong(srv, program, *args):
    """Runs a pingpong example's server on node a and its client on node b over loopback TCP."""
    port = str(free_port())
    server = srv.start("a", program, "-p", port, *args)
    wait_listening(int(port), server)
    client = srv.start("b", program, "-p", port, *args, "127.0.0.1")
    results = finish([server, client])
    for who, (code, out, err) in zip(("server", "client"), results):
        if code != 0:
            fail("%s %s exited %d:\n%s%s\nserve log:\n%s" % (program, who, code, out, err,
                                                              srv.text()))
        expect_line(out, r"\d+ iters in [\d.]+ seconds", "%s %s" % (program, who))
    return results


def expect_line(text, pattern, what):
    if not re.search(pattern, text, re.M):
        fail("%s: no line matching %r in:\n%s" % (what, pattern, text))


def case_devinfo(hcasim, src, tmp):
    # Configured attributes the device must report: a 2 KiB MTU on a, two ports on b, 2^12 QP
    # contexts (QPNs from 0x40: 4032 QPs), 200 Gb/s ports (HDR, 50 Gb/s per lane).
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp,
                 "--set", "nodes.a.hca.port.mtu=2048", "--set", "nodes.b.hca.ports=2",
                 "--set", "defaults.host.driver.log_qps=12",
                 "--set", "defaults.hca.port.gbps=200")
    try:
        code, out, err = srv.run("a", "ibv_devinfo", "-v")
        if code != 0:
            fail("ibv_devinfo -v exited %d:\n%s%s" % (code, out, err))
        expect_line(out, r"^hca_id:\s+hcasim_a$", "device name")
        expect_line(out, r"transport:\s+InfiniBand \(0\)", "transport")
        expect_line(out, r"vendor_id:\s+0x02c9", "vendor")
        expect_line(out, r"vendor_part_id:\s+4119", "part id")
        expect_line(out, r"board_id:\s+HCASIM_SIMULATED_HCA", "board id (sysfs)")
        expect_line(out, r"phys_port_cnt:\s+1$", "ports of a")
        expect_line(out, r"max_qp:\s+4032$", "max_qp from host.driver.log_qps=12")
        expect_line(out, r"max_qp_wr:\s+32768$", "max_qp_wr")
        expect_line(out, r"atomic_cap:\s+ATOMIC_HCA \(1\)", "atomics")
        expect_line(out, r"state:\s+PORT_ACTIVE \(4\)", "port state")
        expect_line(out, r"active_mtu:\s+2048 \(4\)", "MTU from nodes.a.hca.port.mtu")
        expect_line(out, r"port_lid:\s+1$", "LID of a")
        expect_line(out, r"link_layer:\s+InfiniBand", "link layer")
        expect_line(out, r"active_width:\s+4X \(2\)", "width")
        expect_line(out, r"active_speed:\s+50.0 Gbps \(64\)", "HDR speed from port.gbps=200")
        expect_line(out, r"GID\[\s*0\]:\s+fe80:0000:0000:0000:0002:c903:0000:0001", "port GID")
        code, out, err = srv.run("b", "ibv_devinfo")
        if code != 0:
            fail("ibv_devinfo on b exited %d:\n%s%s" % (code, out, err))
        expect_line(out, r"^hca_id:\s+hcasim_b$", "device of b")
        expect_line(out, r"phys_port_cnt:\s+2$", "two ports from nodes.b.hca.ports=2")
        if len(re.findall(r"port:\s+[12]$", out, re.M)) != 2:
            fail("ibv_devinfo on b lists not two ports:\n" + out)
        expect_line(out, r"active_mtu:\s+4096 \(5\)", "default MTU on b")
        code, out, err = srv.run("b", "ibv_devices")
        expect_line(out, r"hcasim_b\s+0002c90300000002", "ibv_devices: name and GUID")
        code, out, err = srv.run("z", "ibv_devinfo")
        if code == 0 or "no node \"z\"" not in err:
            fail("a node not in the scenario should be refused by name:\n%s%s" % (out, err))
    finally:
        srv.stop()
    stats = srv.stats()
    if len(stats.get("apps", [])) != 3:
        fail("stats.json should list the three programs that attached: %s" % stats.get("apps"))


def app_qps(stats, program):
    """The QPs of one program in stats.json, with at least one that moved data."""
    apps = [a for a in stats.get("apps", []) if a["program"] == program]
    if not apps:
        fail("stats.json has no program %s: %s" % (program, [a["program"] for a in stats["apps"]]))
    return [q for a in apps for q in a["qps"]]


def case_rc_pingpong(hcasim, src, tmp):
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp)
    try:
        # Busy polling, then completion events (-e), 4 KiB messages then inline-sized ones.
        pingpong(srv, "ibv_rc_pingpong", "-n", "200")
        pingpong(srv, "ibv_rc_pingpong", "-n", "100", "-e", "-s", "64")
        # A program killed while attached: the server destroys what it left (its region is
        # unpinned) and writes stats.json.
        port = free_port()
        victim = srv.start("a", "ibv_rc_pingpong", "-p", str(port))
        wait_listening(port, victim)
        victim.kill()
        victim.communicate()
        deadline = time.time() + 60
        while srv.text().count("detached") < 5 and time.time() < deadline:
            time.sleep(0.05)
    finally:
        srv.stop()
    qps = app_qps(srv.stats(), "ibv_rc_pingpong")
    sends = sum(q["opcodes"].get("send", 0) for q in qps)
    # Each side sends once per iteration: 2 x 200 + 2 x 100.
    if sends != 600:
        fail("stats.json counts %d sends of ibv_rc_pingpong (expected 600): %s" % (sends, qps))
    if any(q["error_completions"] for q in qps):
        fail("error completions: %s" % qps)
    stats = srv.stats()
    if stats["nodes"]["a"]["hca"]["doorbell"]["send"] < 300:
        fail("node a's HCA took %d send doorbells (expected one per send, 300)" %
             stats["nodes"]["a"]["hca"]["doorbell"]["send"])
    if len(stats["apps"]) != 5 or stats["nodes"]["a"]["host"]["pinned_user_pages"] != 0:
        fail("the killed program was not cleaned up: %d programs, %d pages still pinned\n%s" %
             (len(stats["apps"]), stats["nodes"]["a"]["host"]["pinned_user_pages"], srv.text()))


def case_ud_pingpong(hcasim, src, tmp):
    """The other pingpong examples: UD, UC, and 16 RC QPs sharing one SRQ."""
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp)
    try:
        pingpong(srv, "ibv_ud_pingpong", "-n", "200")
        pingpong(srv, "ibv_uc_pingpong", "-n", "100")
        pingpong(srv, "ibv_srq_pingpong", "-n", "100")
    finally:
        srv.stop()
    qps = app_qps(srv.stats(), "ibv_ud_pingpong")
    if not all(q["type"] == "UD" for q in qps) or sum(q["recv_completions"] for q in qps) < 400:
        fail("ibv_ud_pingpong's UD QPs did not receive 2 x 200 datagrams: %s" % qps)
    qps = app_qps(srv.stats(), "ibv_uc_pingpong")
    if not all(q["type"] == "UC" for q in qps) or sum(q["recv_completions"] for q in qps) < 200:
        fail("ibv_uc_pingpong's UC QPs did not receive 2 x 100 messages: %s" % qps)
    qps = app_qps(srv.stats(), "ibv_srq_pingpong")
    if len(qps) != 32 or sum(q["recv_completions"] for q in qps) < 200:
        fail("ibv_srq_pingpong's 2 x 16 QPs did not receive 2 x 100 messages through their "
             "SRQs: %s" % qps)


def case_unsupported(hcasim, src, tmp):
    """What the simulated HCA does not do fails as verbs define it, said on stderr, no crash."""
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp)
    try:
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
        cq_ex = ("from pyverbs.device import Context, get_device_list\n"
                 "from pyverbs.cq import CQEX, CqInitAttrEx\n"
                 "CQEX(Context(name=get_device_list()[0].name.decode()), CqInitAttrEx())\n")
        for command, verb in ((["ibv_xsrq_pingpong", "-p", str(free_port())], "ibv_open_xrcd"),
                              ([python, "-c", cq_ex], "ibv_create_cq_ex")):
            code, out, err = srv.run("a", *command)
            if code <= 0 or "hcasim: %s:" % verb not in err or \
                    "not supported by the simulated HCA" not in err:
                fail("%s should fail (exit > 0, not a signal) saying %s is not supported: exit "
                     "%d\n%s%s" % (command, verb, code, out, err))
            print("ok: %s: %s" % (command[0], [l for l in err.splitlines() if "hcasim:" in l][0]))
    finally:
        srv.stop()
    # With hcasim's library but no server: no device, and the reason on stderr.
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(os.path.dirname(hcasim), "lib", "hcasim"),
               HCASIM_SOCKET=os.path.join(tmp, "nobody.sock"))
    p = subprocess.run(["ibv_devinfo"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode <= 0 or "cannot reach hcasim serve" not in p.stderr:
        fail("ibv_devinfo without a server should say so and fail: exit %d\n%s%s" %
             (p.returncode, p.stdout, p.stderr))
    print("ok: no server: " + p.stderr.strip().splitlines()[0])


def perftest_pair(srv, test, args):
    """perftest TEST's server on b and client on a, run to completion; the client's output."""
    port = str(free_port())
    server = srv.start("b", test, "-p", port, "-F", *args)
    wait_listening(int(port), server)
    client = srv.start("a", test, "-p", port, "-F", *args, "127.0.0.1")
    results = finish([server, client])
    for who, (code, out, err) in zip(("server", "client"), results):
        if code != 0:
            fail("%s %s exited %d:\n%s%s\nserve log:\n%s" % (test, who, code, out, err,
                                                              srv.text()))
    return results[1][1]


def scenario_figures(hcasim, test, args, tmp):
    """The same test as `hcasim perftest` runs it on the same two default nodes."""
    out = os.path.join(tmp, "perftest_" + test)
    p = subprocess.run([hcasim, "perftest", test, *args, "--out", out],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        fail("hcasim perftest %s %s exited %d:\n%s%s" % (test, args, p.returncode, p.stdout,
                                                          p.stderr))
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f)["workloads"][0]


# What an attached perftest's simulated figures must match the scenario's within: bandwidth 2 %,
# latency 5 % (the program's own CPU time between calls, --cpu-gap, is the difference), the
# latency of ib_write_lat, which polls its memory, 10 % (below).
BW_TOLERANCE = 0.02
LAT_TOLERANCE = 0.05
WRITE_LAT_TOLERANCE = 0.10


def within(got, want, tolerance, what, names=("attached program", "scenario")):
    if not want or abs(got - want) > tolerance * want:
        fail("%s: %s %.4g, %s %.4g (tolerance %d %%)" %
             (what, names[0], got, names[1], want, tolerance * 100))
    print("ok: %s: %s %.4g, %s %.4g" % (what, names[0], got, names[1], want))


def case_perftest(hcasim, src, tmp):
    tests = [("ib_write_bw", ["-s", "65536", "-n", "300"]),
             ("ib_send_bw", ["-s", "4096", "-n", "500"]),
             ("ib_read_lat", ["-s", "64", "-n", "300"]),
             # Waits by polling its memory, not a CQ: time goes on to the next DMA write into it.
             ("ib_write_lat", ["-s", "64", "-n", "100"])]
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp)
    try:
        for test, args in tests:
            out = perftest_pair(srv, test, args)
            expect_line(out, r"^ \d+\s+%s\s" % args[3], "%s's result line" % test)
    finally:
        srv.stop()
    apps = srv.stats()["apps"]
    for i, (test, args) in enumerate(tests):
        client = [a for a in apps if a["program"] == test and a["node"] == "a"]
        if len(client) != 1:
            fail("stats.json has not one %s client: %s" % (test, [a["program"] for a in apps]))
        qp = max(client[0]["qps"], key=lambda q: q["posted"])
        want = scenario_figures(hcasim, test, args, tmp)
        if test.endswith("_bw"):
            within(qp["send_gbps"], want["gbps"], BW_TOLERANCE, test + " Gb/s")
        elif test == "ib_write_lat":
            # perftest's write latency is half the round trip a ping-pong iteration takes.
            # hcasim perftest plays both sides in one thread, so each iteration also carries both
            # sides' send-CQ drains one after the other, which the two programs do at once: the
            # scenario's figure is ~40 ns (6 %) higher.
            within(qp["iteration_ns"]["p50"] / 2, want["lat_ns"]["p50"], WRITE_LAT_TOLERANCE,
                   test + " typical latency ns")
        else:
            within(qp["iteration_ns"]["p50"], want["lat_ns"]["p50"], LAT_TOLERANCE,
                   test + " typical latency ns")
            within(qp["iteration_ns"]["avg"], want["lat_ns"]["avg"], LAT_TOLERANCE,
                   test + " average latency ns")


def case_pyverbs(hcasim, src, tmp):
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
    script = os.path.join(src, "tests/apps/pyverbs_protection.py")
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp)
    try:
        port = free_port()
        target = srv.start("b", python, script, "target", str(port))
        wait_listening(port, target)
        initiator = srv.start("a", python, script, "initiator", "127.0.0.1", str(port))
        for who, (code, out, err) in zip(("target", "initiator"), finish([target, initiator])):
            print(out, end="")
            if code != 0:
                fail("the pyverbs %s exited %d:\n%s%s" % (who, code, out, err))
    finally:
        srv.stop()
    nodes = srv.stats()["nodes"]
    if nodes["b"]["hca"]["tpt"]["protection_errors"] < 2:
        fail("node b's TPT counted %s protection errors (expected the two refused remote "
             "writes)" % nodes["b"]["hca"]["tpt"]["protection_errors"])


def case_record(hcasim, src, tmp):
    """An attached perftest recorded into a trace, replayed as a scenario's workload."""
    trace = os.path.join(tmp, "write_bw.trace.jsonl")
    srv = Server(hcasim, os.path.join(src, "scenarios/apps/loopback.json"), tmp,
                 "--record", trace)
    try:
        perftest_pair(srv, "ib_write_bw", ["-s", "16384", "-n", "200"])
    finally:
        srv.stop()
    with open(trace) as f:
        records = [json.loads(line) for line in f]
    posts = [r for r in records if r.get("op") == "post_send"]
    if len(posts) != 200 or records[0].get("hcasim_trace") != 1:
        fail("the trace should hold ib_write_bw's 200 RDMA writes: %d posts" % len(posts))
    client = [a for a in srv.stats()["apps"] if a["program"] == "ib_write_bw" and
              a["node"] == "a"][0]
    recorded = max(client["qps"], key=lambda q: q["posted"])["send_gbps"]
    scenario = os.path.join(tmp, "replay.json")
    with open(scenario, "w") as f:
        json.dump({"name": "replay_recorded", "seed": 1, "nodes": {"a": {}, "b": {}},
                   "workloads": [{"type": "replay", "trace": trace}]}, f)
    out = os.path.join(tmp, "replay")
    p = subprocess.run([hcasim, "run", scenario, "-o", out, "--quiet"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        fail("the replay of the recorded trace exited %d:\n%s%s" % (p.returncode, p.stdout,
                                                                    p.stderr))
    with open(os.path.join(out, "stats.json")) as f:
        replayed = json.load(f)["workloads"][0]
    if replayed.get("iters") != 200 or replayed.get("data_check") != "ok":
        fail("the replay did not post the 200 writes with their bytes: %s" % replayed)
    within(replayed["gbps"], recorded, 0.05, "Gb/s", ("replayed", "recorded program"))


CASES = {"devinfo": case_devinfo, "record": case_record, "rc_pingpong": case_rc_pingpong,
         "ud_pingpong": case_ud_pingpong, "unsupported": case_unsupported, "perftest": case_perftest, "pyverbs": case_pyverbs}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(__doc__ + "\ncases: " + ", ".join(CASES))
        return 2
    hcasim, src, case = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="hcasim-apps-") as tmp:
        CASES[case](os.path.abspath(hcasim), os.path.abspath(src), tmp)
    print("ok: " + case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
