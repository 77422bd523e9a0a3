#!/usr/bin/env python3
"""Writes the bundled traces of traces/ (deterministic: rerun and nothing changes).

    python3 traces/generate.py          # from the source root

kv_get_put.trace.jsonl    a key-value store's GET/PUT mix, one-sided (as Pilaf and FaRM
                          read values): two clients on node a, one server on node b; 90 % GETs
                          (RDMA READ of a 512-byte value), 10 % PUTs (RDMA WRITE of the value,
                          then an 8-byte WRITE of its version word once the value has
                          completed), at most 4 requests outstanding per client.
ring_allreduce.trace.jsonl  a ring allreduce of 64 KiB per rank over four ranks on nodes n0..n3
                          (the reduce-scatter and allgather phases: 2 x 3 steps); in each step a
                          rank sends one 16 KiB chunk to the next rank and waits for the chunk
                          from the previous one (posted as a receive before the step) and for its
                          own send, as NCCL's ring does, before the next step.
ps_push_pull.trace.jsonl  a parameter server: two workers on node a push gradients (RDMA WRITE)
                          and a note (send) to the server on node b, which waits for both,
                          aggregates and tells each to pull the parameters (RDMA READ); 3 rounds.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, header, records):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write(json.dumps({"hcasim_trace": 1, "description": header}) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")
    print(path)


def after_field(after):
    """The optional "after" of a record: absent when it waits for nothing."""
    return {"after": after} if after else {}


def round_robin(lists):
    """The records of each process's list, interleaved one at a time (each keeps its order)."""
    merged = []
    for i in range(max(len(v) for v in lists)):
        for v in lists:
            if i < len(v):
                merged.append(v[i])
    return merged


def kv_get_put():
    rng = random.Random(42)
    value, values, per_client, depth = 512, 1024, 500, 4
    recs = [{"op": "process", "name": "server", "node": "b"},
            {"op": "reg_mr", "process": "server", "mr": "store", "length": value * values}]
    clients = ["client0", "client1"]
    for c in clients:
        recs.append({"op": "process", "name": c, "node": "a"})
        recs.append({"op": "reg_mr", "process": c, "mr": "buf", "length": value * depth})
        recs.append({"op": "reg_mr", "process": c, "mr": "vals", "length": value * depth})
    for c in clients:
        recs.append({"op": "connect", "a": {"process": c, "qp": "kv"},
                     "b": {"process": "server", "qp": f"from_{c}"}, "depth": 64})
    per = []  # each client's records
    for ci, c in enumerate(clients):
        ops = []
        inflight = []  # ids outstanding, oldest first
        for n in range(per_client):
            slot = n % depth
            key = rng.randrange(values)
            after = []
            if len(inflight) == depth:  # closed loop: the oldest request has completed
                after = [inflight.pop(0)]
            common = {"process": c, "qp": "kv", "mr": "buf", "remote_mr": "store",
                      "remote_offset": key * value, "delay": "200ns"}
            if rng.random() < 0.9:
                rid = f"get{n}"
                ops.append({"op": "post_send", "opcode": "read", "size": value,
                            "offset": slot * value, "id": rid, **after_field(after), **common})
            else:
                # The value, then its version word (its last 8 bytes) once the value is in
                # place. Each client owns the keys of its parity, so no two write one key.
                key = key - key % len(clients) + ci
                vid, rid = f"putv{n}", f"put{n}"
                put = {**common, "mr": "vals", "remote_offset": key * value}
                # "mr" also named before "offset": its place in the bundled trace's records.
                ops.append({"op": "post_send", "opcode": "write", "size": value, "mr": put["mr"],
                            "offset": slot * value, "id": vid, **after_field(after), **put})
                ops.append({"op": "post_send", "opcode": "write", "size": 8,
                            "offset": slot * value + value - 8, "id": rid, "after": [vid],
                            **put, "remote_offset": key * value + value - 8, "delay": "50ns"})
            inflight.append(rid)
        ops.append({"op": "wait", "process": c, "ids": inflight})
        per.append(ops)
    merged = round_robin(per)
    write("kv_get_put.trace.jsonl",
          "key-value GET/PUT mix: 2 clients on a, server on b; 90% 512 B RDMA READ gets, 10% "
          "512 B RDMA WRITE puts plus an 8 B version write; 4 outstanding per client; "
          "traces/generate.py", recs + merged)


def ring_allreduce():
    ranks, per_rank = 4, 64 * 1024
    chunk = per_rank // ranks
    recs = []
    for r in range(ranks):
        recs.append({"op": "process", "name": f"rank{r}", "node": f"n{r}"})
        recs.append({"op": "reg_mr", "process": f"rank{r}", "mr": "data", "length": per_rank})
        recs.append({"op": "reg_mr", "process": f"rank{r}", "mr": "inbox", "length": per_rank})
    for r in range(ranks):
        nxt = (r + 1) % ranks
        recs.append({"op": "connect", "a": {"process": f"rank{r}", "qp": "next"},
                     "b": {"process": f"rank{nxt}", "qp": "prev"}, "depth": 16})
    steps = 2 * (ranks - 1)
    per = {r: [] for r in range(ranks)}
    for r in range(ranks):
        p = f"rank{r}"
        per[r].append({"op": "post_recv", "process": p, "qp": "prev", "mr": "inbox",
                       "offset": 0, "size": chunk, "id": "recv0"})
        for s in range(steps):
            send_chunk = (r - s) % ranks
            after = [] if s == 0 else [f"recv{s - 1}", f"send{s - 1}"]
            if s + 1 < steps:  # the next step's receive, posted before this step's send
                per[r].append({"op": "post_recv", "process": p, "qp": "prev", "mr": "inbox",
                               "offset": ((s + 1) % ranks) * chunk, "size": chunk,
                               "id": f"recv{s + 1}", **after_field(after)})
                after = []
            per[r].append({"op": "post_send", "process": p, "qp": "next", "opcode": "send",
                           "mr": "data", "offset": send_chunk * chunk, "size": chunk,
                           "id": f"send{s}", "delay": "1us" if s else "0ns",
                           **after_field(after)})
        per[r].append({"op": "wait", "process": p, "ids": [f"recv{steps - 1}", f"send{steps - 1}"]})
    merged = round_robin([per[r] for r in range(ranks)])
    write("ring_allreduce.trace.jsonl",
          "ring allreduce, 4 ranks on n0..n3, 64 KiB per rank in 16 KiB chunks: 6 steps of "
          "send-to-next, receive-from-previous (1 us of reduction between steps); "
          "traces/generate.py", recs + merged)


def ps_push_pull():
    workers, size, rounds = 2, 64 * 1024, 3
    recs = [{"op": "process", "name": "server", "node": "b"},
            {"op": "reg_mr", "process": "server", "mr": "grads", "length": size * workers},
            {"op": "reg_mr", "process": "server", "mr": "params", "length": size},
            {"op": "reg_mr", "process": "server", "mr": "notes", "length": 64 * workers}]
    for w in range(workers):
        p = f"worker{w}"
        recs += [{"op": "process", "name": p, "node": "a"},
                 {"op": "reg_mr", "process": p, "mr": "grads", "length": size},
                 {"op": "reg_mr", "process": p, "mr": "params", "length": size},
                 {"op": "reg_mr", "process": p, "mr": "notes", "length": 64},
                 {"op": "connect", "a": {"process": p, "qp": "ps"},
                  "b": {"process": "server", "qp": f"w{w}"}, "depth": 16}]
    ops = []
    for r in range(rounds):
        # The server expects each worker's "pushed" note, aggregates, then tells each to pull.
        for w in range(workers):
            ops.append({"op": "post_recv", "process": "server", "qp": f"w{w}", "mr": "notes",
                        "offset": 64 * w, "size": 64, "id": f"pushed{r}_{w}"})
        for w in range(workers):
            p = f"worker{w}"
            ops.append({"op": "post_recv", "process": p, "qp": "ps", "mr": "notes", "size": 64,
                        "id": f"ready{r}"})
            ops.append({"op": "post_send", "process": p, "qp": "ps", "opcode": "write",
                        "mr": "grads", "size": size, "remote_mr": "grads",
                        "remote_offset": size * w, "id": f"push{r}", "delay": "20us",
                        **after_field([f"pull{r - 1}"] if r else [])})
            ops.append({"op": "post_send", "process": p, "qp": "ps", "opcode": "send",
                        "mr": "notes", "size": 8, "id": f"note{r}", "after": [f"push{r}"]})
        ops.append({"op": "wait", "process": "server",
                    "ids": [f"pushed{r}_{w}" for w in range(workers)]})
        for w in range(workers):
            ops.append({"op": "post_send", "process": "server", "qp": f"w{w}", "opcode": "send",
                        "mr": "notes", "offset": 64 * w, "size": 8, "id": f"go{r}_{w}",
                        "delay": "5us" if w == 0 else "0ns"})
        for w in range(workers):
            ops.append({"op": "post_send", "process": f"worker{w}", "qp": "ps", "opcode": "read",
                        "mr": "params", "size": size, "remote_mr": "params", "id": f"pull{r}",
                        "after": [f"ready{r}", f"note{r}"]})
    for w in range(workers):
        ops.append({"op": "wait", "process": f"worker{w}", "ids": [f"pull{rounds - 1}"]})
    ops.append({"op": "wait", "process": "server",
                "ids": [f"go{rounds - 1}_{w}" for w in range(workers)]})
    write("ps_push_pull.trace.jsonl",
          "parameter server: 2 workers on a push 64 KiB of gradients (RDMA WRITE) and a note "
          "(send) to the server on b, which waits for both, aggregates for 5 us and tells each "
          "to pull the 64 KiB of parameters (RDMA READ); 3 rounds, 20 us of compute before each "
          "push; traces/generate.py", recs + ops)


if __name__ == "__main__":
    kv_get_put()
    ring_allreduce()
    ps_push_pull()
