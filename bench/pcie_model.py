#!/usr/bin/env python3
"""Effective PCIe bandwidth of DMA reads and writes, from the PCIe Base Specification's rules,
after the analytical model of Neugebauer et al., "Understanding PCIe performance for end host
networking", SIGCOMM 2018 (pcie-bench). An independent reimplementation for validating hcasim.

Per direction the link carries, besides TLPs:
  - an Ack DLLP and an UpdateFC DLLP (8 B each with framing) per "limit" symbol times, where
    the limit is the spec's AckNak latency limit / UpdateFC guideline for the generation, width
    and MPS (PCIe Base Spec 5.0 tables 3-7..3-9, 2-46..2-48). In a symbol time every lane
    carries a byte, so the link moves limit x width bytes between two DLLPs of a kind.
    pcie-bench's model reads the limits as bytes, which charges an x8 link 8 times the DLLPs
    (7.9 % of Gen3 x8 at MPS 256 instead of 1 %); its own measurement refutes that: the NFP-6000
    reads 2 KiB at 55.6 Gb/s on Gen3 x8, above the 53.8 Gb/s that reading allows the
    completions' direction;
  - SKP ordered sets: 8b/10b 4 symbols per 1538, 128b/130b one block per 370 data blocks.
TLPs: memory write / read request 4 B common header + 12 B (64-bit address) + 8 B framing,
sequence number and LCRC; completion with data 4 + 8 + 8 B; 4 B more each with ECRC.
Writes split at MPS; read requests at MRRS; completions at MPS ("mps") or RCB ("rcb").
A read's bandwidth is the smaller of what the completions' direction and the requests'
direction allow.
"""
import math

GT_PER_S = {1: 2.5e9, 2: 5e9, 3: 8e9, 4: 16e9, 5: 32e9}
# Ack latency limit = UpdateFC guideline, symbol times: generation class -> width -> MPS.
LIMITS = {
    1: {1: [237, 416, 559, 1071, 2095, 4143], 2: [128, 217, 289, 545, 1057, 2081],
        4: [73, 118, 154, 282, 538, 1050], 8: [67, 107, 86, 150, 278, 534],
        16: [48, 72, 86, 150, 278, 534]},
    2: {1: [288, 467, 610, 1122, 2146, 4194], 2: [179, 268, 340, 596, 1108, 2132],
        4: [124, 169, 205, 333, 589, 1101], 8: [118, 158, 137, 201, 329, 585],
        16: [99, 123, 137, 201, 329, 585]},
    3: {1: [333, 512, 655, 1167, 2191, 4239], 2: [224, 313, 385, 641, 1153, 2177],
        4: [169, 214, 250, 378, 634, 1146], 8: [163, 203, 182, 246, 374, 630],
        16: [144, 168, 182, 246, 374, 630]},
}
MPS_INDEX = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
DLLP = 8
FRAMING = 8


def raw_bytes_per_s(gen, lanes):
    coding = 0.8 if gen <= 2 else 128.0 / 130.0
    return GT_PER_S[gen] * coding * lanes / 8.0


def overhead_share(gen, lanes, mps):
    width = max(w for w in (1, 2, 4, 8, 16) if w <= lanes)
    limit_bytes = LIMITS[min(gen, 3)][width][MPS_INDEX[mps]] * width
    skp = 4.0 / 1538.0 if gen <= 2 else 1.0 / 371.0
    return 2.0 * DLLP / limit_bytes + skp


def tlp_bytes_per_s(gen, lanes, mps):
    return raw_bytes_per_s(gen, lanes) * (1.0 - overhead_share(gen, lanes, mps))


def write_gbps(size, gen, lanes, mps, ecrc=False):
    hdr = 4 + 12 + FRAMING + (4 if ecrc else 0)
    tlps = math.ceil(size / mps)
    wire = size + tlps * hdr
    return tlp_bytes_per_s(gen, lanes, mps) * size / wire * 8 / 1e9


def read_gbps(size, gen, lanes, mps, mrrs, completions="mps", rcb=64, ecrc=False):
    req_hdr = 4 + 12 + FRAMING + (4 if ecrc else 0)
    cpl_hdr = 4 + 8 + FRAMING + (4 if ecrc else 0)
    # Per MRRS request: completions at MPS, or RCB, boundaries (requests aligned).
    chunk = mps if completions == "mps" else rcb
    down = 0
    left = size
    requests = 0
    while left > 0:
        req = min(left, mrrs)
        down += req + math.ceil(req / chunk) * cpl_hdr
        requests += 1
        left -= req
    up = requests * req_hdr
    bw = tlp_bytes_per_s(gen, lanes, mps)
    transfers_per_s = min(bw / down, bw / up)
    return transfers_per_s * size * 8 / 1e9


if __name__ == "__main__":
    for gen in (1, 2, 3, 4, 5):
        for lanes in (1, 4, 8, 16):
            print(f"Gen{gen} x{lanes}: overhead {overhead_share(gen, lanes, 256):.4f}, "
                  f"write 64 KiB {write_gbps(65536, gen, lanes, 256):.2f} Gb/s, "
                  f"read 64 KiB {read_gbps(65536, gen, lanes, 256, 512):.2f} Gb/s")
