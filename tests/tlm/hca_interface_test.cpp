// Unit checks for tlm/hca_interface: every structure survives encode -> decode with random field
// values (each field at its own bytes: a round trip fails if two fields overlap or one is
// dropped), field offsets that the driver and the HCA both rely on, the key helpers, doorbell
// decoding, WQE strides and the CQE owner bit per pass over the ring.
#include "tlm/hca_interface.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <tuple>
#include <vector>

using namespace hcasim::hca_if;

namespace {
std::mt19937_64 rng(21);
template <class T>
T r() {
    return static_cast<T>(rng());
}

// Every field of each structure as a tuple, so a round trip compares all of them at once.
auto fields(const qp_context& c) {
    return std::make_tuple(c.state, c.type, c.access, c.page_shift, c.pd, c.send_cqn, c.recv_cqn,
                           c.remote_qpn, c.remote_lid, c.sq_log_depth, c.rq_log_depth,
                           c.sq_wqe_shift, c.rq_wqe_shift, c.sq_buf_table, c.rq_buf_table, c.sq_ci,
                           c.rq_ci, c.sq_pi, c.rq_pi, c.next_psn, c.expected_psn, c.ptag, c.qpn,
                           c.qkey);
}
auto fields(const cq_context& c) {
    return std::make_tuple(c.log_depth, c.page_shift, c.valid, c.buf_table, c.producer_index,
                           c.cqn);
}
auto fields(const mpt_entry& e) {
    return std::make_tuple(e.valid, e.type, e.device_memory, e.implicit, e.key_byte, e.access,
                           e.page_shift, e.pd, e.start, e.length, e.mtt_index, e.mtt_count, e.ptag,
                           e.qpn, e.parent, e.page_base);
}
auto fields(const eqe& q) {
    return std::make_tuple(q.type, q.flags, q.owner, q.token, q.mpt_index, q.qpn, q.addr, q.length);
}
auto fields(const cqe& c) {
    return std::make_tuple(c.wr_id, c.byte_len, c.imm, c.qpn, c.opcode, c.status, c.flags, c.owner,
                           c.src_qp, c.sl, c.vendor_err, c.wqe_counter, c.slid);
}
auto sge_fields(const std::array<sge, 16>& s, unsigned n) {
    std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> out;
    for (unsigned k = 0; k < n; ++k) out.emplace_back(s[k].length, s[k].lkey, s[k].addr);
    return out;
}
auto fields(const datagram_seg& d) {
    return std::make_tuple(d.remote_qpn, d.flags, d.qkey, d.dlid, d.sl, d.pd, d.dgid);
}
auto fields(const send_wqe& w) {
    return std::make_tuple(w.opcode, w.flags, w.num_sge, w.imm, w.wr_id, w.remote_addr, w.rkey,
                           w.compare_add, w.swap, fields(w.datagram),
                           sge_fields(w.sges, w.num_sge));
}
auto fields(const recv_wqe& w) {
    return std::make_tuple(w.wr_id, w.num_sge, sge_fields(w.sges, w.num_sge));
}

// Encodes `v` into a buffer prefilled with garbage, decodes it, and compares every field.
template <class T, class... Stride>
void expect_round_trip(const T& v, size_t size, Stride... stride) {
    std::vector<uint8_t> b(size, 0xA5);
    v.encode(b.data());
    const T d = T::decode(b.data(), stride...);
    EXPECT_EQ(fields(d), fields(v)) << "decode(encode(v)) gives back every field";
}

std::array<sge, 16> random_sges(unsigned n) {
    std::array<sge, 16> s{};
    for (unsigned k = 0; k < n; ++k) s[k] = {r<uint32_t>(), r<uint32_t>(), r<uint64_t>()};
    return s;
}

}  // namespace

TEST(hca_interface, every_layout_round_trips_random_field_values) {
    for (int i = 0; i < 200; ++i) {
        qp_context c;
        c.state = static_cast<qp_state>(rng() % 7);
        c.type = static_cast<qp_type>(2 + rng() % 3);
        c.access = r<uint8_t>(), c.page_shift = r<uint8_t>(), c.pd = r<uint32_t>();
        c.send_cqn = r<uint32_t>(), c.recv_cqn = r<uint32_t>(), c.remote_qpn = r<uint32_t>();
        c.remote_lid = r<uint16_t>(), c.sq_log_depth = r<uint8_t>(), c.rq_log_depth = r<uint8_t>();
        c.sq_wqe_shift = r<uint8_t>(), c.rq_wqe_shift = r<uint8_t>();
        c.sq_buf_table = r<uint64_t>(), c.rq_buf_table = r<uint64_t>();
        c.sq_ci = r<uint32_t>(), c.rq_ci = r<uint32_t>(), c.sq_pi = r<uint32_t>();
        c.rq_pi = r<uint32_t>(), c.next_psn = r<uint32_t>(), c.expected_psn = r<uint32_t>();
        c.ptag = r<uint32_t>(), c.qpn = r<uint32_t>(), c.qkey = r<uint32_t>();
        expect_round_trip(c, qp_context::size);

        cq_context q;
        q.log_depth = r<uint8_t>(), q.page_shift = r<uint8_t>(), q.valid = r<uint8_t>();
        q.buf_table = r<uint64_t>(), q.producer_index = r<uint32_t>(), q.cqn = r<uint32_t>();
        expect_round_trip(q, cq_context::size);

        mpt_entry e;
        e.valid = rng() % 2, e.type = static_cast<mpt_type>(rng() % 3), e.key_byte = r<uint8_t>();
        e.access = r<uint8_t>(), e.page_shift = r<uint8_t>(), e.pd = r<uint32_t>();
        e.start = r<uint64_t>(), e.length = r<uint64_t>(), e.mtt_index = r<uint64_t>();
        e.mtt_count = r<uint32_t>(), e.ptag = r<uint32_t>(), e.qpn = r<uint32_t>();
        e.parent = r<uint32_t>(), e.page_base = r<uint64_t>();
        e.device_memory = rng() % 2, e.implicit = rng() % 2;
        expect_round_trip(e, mpt_entry::size);

        eqe v;
        v.type = static_cast<event_type>(1 + rng() % 2), v.flags = r<uint8_t>();
        v.owner = r<uint8_t>(), v.token = r<uint32_t>(), v.mpt_index = r<uint32_t>();
        v.qpn = r<uint32_t>(), v.addr = r<uint64_t>(), v.length = r<uint32_t>();
        expect_round_trip(v, eqe::size);

        cqe k;
        k.wr_id = r<uint64_t>(), k.byte_len = r<uint32_t>(), k.imm = r<uint32_t>();
        k.qpn = r<uint32_t>() & 0xFFFFFF,
        k.opcode = rng() % 2 ? cqe_opcode::recv : cqe_opcode::fetch_add;
        k.status = static_cast<wc_status>(rng() % 22), k.flags = r<uint8_t>(), k.owner = rng() % 2;
        k.src_qp = r<uint32_t>() & 0xFFFFFF, k.sl = r<uint8_t>(), k.vendor_err = r<uint8_t>();
        k.slid = r<uint16_t>(), k.wqe_counter = r<uint16_t>();
        expect_round_trip(k, cqe::size);

        send_wqe w;
        // Any flags but inline_data (its WQEs carry bytes instead of SGEs; round-tripped below).
        w.opcode = static_cast<wqe_opcode>(rng() % 10);
        w.flags = r<uint8_t>() & ~wqe_flags::inline_data;
        w.num_sge = static_cast<uint8_t>(rng() % 5), w.imm = r<uint32_t>(), w.wr_id = r<uint64_t>();
        w.remote_addr = r<uint64_t>(), w.rkey = r<uint32_t>(), w.compare_add = r<uint64_t>();
        w.swap = r<uint64_t>(), w.sges = random_sges(w.num_sge);
        expect_round_trip(w, send_wqe::stride_for(4), send_wqe::stride_for(4));
        {
            // An inline WQE: ds in ctrl byte 3, then the byte count (bit 31 set) and the bytes.
            send_wqe in = w;
            in.flags |= wqe_flags::inline_data;
            in.num_sge = 0;
            in.inline_bytes.resize(rng() % 200);
            for (auto& b : in.inline_bytes) b = r<uint8_t>();
            std::vector<uint8_t> ib(send_wqe::stride_for(1, 200), 0xA5);
            in.encode(ib.data());
            EXPECT_EQ(ib[3], in.size() / 16) << "ds";
            EXPECT_EQ(get<uint32_t>(ib.data() + send_wqe_header),
                      in.inline_bytes.size() | inline_seg_bit);
            const send_wqe back = send_wqe::decode(ib.data(), in.size());
            EXPECT_EQ(fields(back), fields(in));
            EXPECT_EQ(back.inline_bytes, in.inline_bytes);
        }

        // The same WQE on a UD QP: the datagram segment in place of the remote and atomic ones.
        send_wqe u = w;
        u.remote_addr = u.compare_add = u.swap = 0, u.rkey = 0;
        u.datagram.remote_qpn = r<uint32_t>() & 0xFFFFFF, u.datagram.flags = r<uint8_t>();
        u.datagram.qkey = r<uint32_t>(), u.datagram.dlid = r<uint16_t>(),
        u.datagram.sl = r<uint8_t>();
        u.datagram.pd = r<uint32_t>();
        for (auto& b : u.datagram.dgid) b = r<uint8_t>();
        std::vector<uint8_t> ub(send_wqe::stride_for(4), 0xA5);
        u.encode(ub.data(), true);
        EXPECT_EQ(fields(send_wqe::decode(ub.data(), ub.size(), true)), fields(u))
            << "a UD WQE round trips with its datagram segment";

        recv_wqe rw;
        rw.wr_id = r<uint64_t>(), rw.num_sge = static_cast<uint8_t>(rng() % 4);
        rw.sges = random_sges(rw.num_sge);
        expect_round_trip(rw, recv_wqe::stride_for(3), recv_wqe::stride_for(3));
        if (HasFailure()) return;
    }
}

TEST(hca_interface, wqe_strides_and_decoding_limits) {
    EXPECT_EQ(send_wqe::stride_for(1), 64u) << "48 + 16 = 64";
    EXPECT_EQ(send_wqe::stride_for(2), 128u) << "48 + 32 = 80 rounds up to 128";
    EXPECT_EQ(send_wqe::stride_for(0), 64u) << "room for one SGE at least";
    EXPECT_EQ(send_wqe::stride_for(5), 128u) << "48 + 80 = 128 exactly";
    EXPECT_EQ(recv_wqe::stride_for(1), 32u);
    EXPECT_EQ(recv_wqe::stride_for(3), 64u);
    // A WQE claiming more SGEs than its stride holds is read only as far as the stride.
    send_wqe w;
    w.num_sge = 4;
    std::vector<uint8_t> b(1024, 0);  // as large as the largest stride decoded below
    w.encode(b.data());
    EXPECT_EQ(send_wqe::decode(b.data(), 64).num_sge, 1u) << "a 64-byte stride holds one SGE";
    b[2] = 200;
    EXPECT_EQ(send_wqe::decode(b.data(), 1024).num_sge, 16u) << "never more than 16 SGEs";
}

// The requester decodes each WQE into a reused slot (send_wqe::decode_into): whatever the slot
// held before (SGEs, inline bytes, a datagram segment), it ends as decode() gives the WQE.
TEST(hca_interface, decoding_into_a_used_wqe_gives_what_decode_gives) {
    send_wqe rc;
    rc.opcode = wqe_opcode::rdma_write;
    rc.num_sge = 4, rc.wr_id = 7, rc.remote_addr = 0x1000, rc.rkey = 0x42, rc.swap = 9;
    for (unsigned i = 0; i < 4; ++i) rc.sges[i] = sge{64 + i, 0x10 + i, 0x100u * (i + 1)};
    send_wqe in = rc;
    in.flags = wqe_flags::inline_data;
    in.num_sge = 0;
    in.inline_bytes.assign(100, 0x3c);
    send_wqe ud;
    ud.opcode = wqe_opcode::send;
    ud.num_sge = 1, ud.sges[0] = sge{256, 0x77, 0x2000};
    ud.datagram.remote_qpn = 0x123456, ud.datagram.qkey = 0x11, ud.datagram.dlid = 3;
    ud.datagram.dgid[5] = 0xfe;
    struct encoded {
        std::vector<uint8_t> bytes;
        bool ud;
    };
    std::vector<encoded> wqes;
    for (const auto* w : {&rc, &in, &ud}) {
        encoded e{std::vector<uint8_t>(send_wqe::stride_for(4, 100), 0xA5), w == &ud};
        w->encode(e.bytes.data(), e.ud);
        wqes.push_back(std::move(e));
    }
    send_wqe slot;
    for (size_t k : {1, 2, 0, 1, 0, 2, 2, 1}) {
        const encoded& e = wqes[k];
        send_wqe::decode_into(slot, e.bytes.data(), e.bytes.size(), e.ud);
        const send_wqe fresh = send_wqe::decode(e.bytes.data(), e.bytes.size(), e.ud);
        EXPECT_EQ(fields(slot), fields(fresh)) << "WQE " << k;
        EXPECT_EQ(sge_fields(slot.sges, 16), sge_fields(fresh.sges, 16))
            << "WQE " << k << ": no SGE left from before";
        EXPECT_EQ(slot.inline_bytes, fresh.inline_bytes) << "WQE " << k;
    }
}

TEST(hca_interface, little_endian_field_offsets) {
    qp_context c;
    c.qpn = 0x00ABCDEF;
    c.sq_buf_table = 0x1122334455667788ULL;
    uint8_t b[qp_context::size];
    c.encode(b);
    EXPECT_EQ(b[76], 0xEF) << "qpn at byte 76, least significant byte first";
    EXPECT_EQ(b[32], 0x88) << "sq_buf_table at byte 32";
    EXPECT_EQ(b[39], 0x11);
    cqe q;
    q.owner = 1;
    uint8_t cb[cqe::size];
    q.encode(cb);
    EXPECT_EQ(cb[23], 1) << "CQE owner bit at byte 23";
    EXPECT_EQ(get<uint32_t>(std::vector<uint8_t>{1, 2, 3, 4}.data()), 0x04030201u);
}

TEST(hca_interface, ud_datagram_segment_and_cqe_offsets) {
    send_wqe w;
    w.opcode = wqe_opcode::send;
    w.num_sge = 1;
    w.sges[0] = {100, 0x1234, 0xABCD};
    w.datagram.remote_qpn = 0x123456;
    w.datagram.flags = datagram_flags::grh;
    w.datagram.qkey = 0x80000000u;
    w.datagram.dlid = 0xBEEF;
    w.datagram.sl = 9;
    w.datagram.pd = 0x01020304;
    w.datagram.dgid = port_gid(0x0102);
    const size_t stride = send_wqe::stride_for(1);
    std::vector<uint8_t> b(stride, 0);
    w.encode(b.data(), true);
    EXPECT_EQ(stride, 64u) << "a UD WQE with one SGE keeps the 64-byte stride";
    EXPECT_EQ(get<uint32_t>(b.data() + 16), 0x01123456u) << "remote QPN bits 23:0, flags 31:24";
    EXPECT_EQ(get<uint32_t>(b.data() + 20), 0x80000000u) << "Q_Key at byte 20";
    EXPECT_EQ(get<uint16_t>(b.data() + 24), 0xBEEFu) << "DLID at byte 24";
    EXPECT_EQ(b[26], 9) << "SL at byte 26";
    EXPECT_EQ(get<uint32_t>(b.data() + 28), 0x01020304u) << "the address handle's PD at byte 28";
    EXPECT_EQ(b[32], 0xfe) << "DGID at byte 32, network order: fe80::";
    EXPECT_EQ(b[33], 0x80);
    EXPECT_EQ(b[46], 0x01) << "the port GUID ends with the LID";
    EXPECT_EQ(b[47], 0x02);
    EXPECT_EQ(get<uint32_t>(b.data() + send_wqe_header + 4), 0x1234u) << "SGEs start at byte 48";
    const send_wqe rc = send_wqe::decode(b.data(), stride);
    EXPECT_EQ(rc.remote_addr, 0x8000000001123456ULL)
        << "read as RC, the same bytes are remote_addr";
    EXPECT_EQ(rc.datagram.pd, 0u) << "and no datagram segment";

    qp_context c;
    c.qkey = 0x11223344;
    uint8_t q[qp_context::size];
    c.encode(q);
    EXPECT_EQ(get<uint32_t>(q + 80), 0x11223344u) << "Q_Key at byte 80 of the QP context";

    cqe e;
    e.src_qp = 0xABCDEF;
    e.sl = 7;
    e.qpn = 0x123456;
    e.vendor_err = 0x99;
    e.wqe_counter = 0x1122;
    e.slid = 0x3344;
    e.flags = cqe_flags::grh;
    uint8_t cb[cqe::size];
    e.encode(cb);
    EXPECT_EQ(get<uint32_t>(cb + 16), 0x99123456u) << "QPN bits 23:0, vendor_err in byte 19";
    EXPECT_EQ(get<uint32_t>(cb + 24), 0x07ABCDEFu) << "src_qp bits 23:0, SL in byte 27";
    EXPECT_EQ(get<uint16_t>(cb + 28), 0x1122u) << "wqe_counter at byte 28";
    EXPECT_EQ(get<uint16_t>(cb + 30), 0x3344u) << "SLID at byte 30";
    EXPECT_EQ(cb[22], cqe_flags::grh) << "flags at byte 22";
}

TEST(hca_interface, keys_split_into_index_and_key_byte) {
    for (int i = 0; i < 1000; ++i) {
        const uint32_t index = r<uint32_t>() & 0xFFFFFF;
        const uint8_t kb = r<uint8_t>();
        const uint32_t key = make_key(index, kb);
        ASSERT_EQ(key_index(key), index) << "the index is bits 31:8";
        ASSERT_EQ(key_byte(key), kb) << "the key byte is bits 7:0";
    }
    EXPECT_EQ(make_key(0x12, 0x34), 0x1234u);
}

TEST(hca_interface, doorbell_word_round_trips_and_rejects_bits_31_24) {
    for (int i = 0; i < 1000; ++i) {
        doorbell_word w;
        w.qpn = r<uint32_t>() & 0xFFFFFF;
        w.producer_index = r<uint32_t>();
        doorbell_word d;
        ASSERT_TRUE(doorbell_word::decode(w.encode(), d));
        ASSERT_EQ(d.qpn, w.qpn);
        ASSERT_EQ(d.producer_index, w.producer_index);
    }
    doorbell_word d;
    for (int bit = 24; bit < 32; ++bit)
        EXPECT_FALSE(doorbell_word::decode((uint64_t{7} << 32) | (uint64_t{1} << bit) | 5, d))
            << "bit " << bit << " is reserved and must be zero";
    EXPECT_TRUE(doorbell_word::decode(0xFFFFFFFF00FFFFFFULL, d)) << "all legal bits set";
    EXPECT_EQ(d.qpn, 0xFFFFFFu);
    EXPECT_EQ(d.producer_index, 0xFFFFFFFFu);
    doorbell_word big;
    big.qpn = 0x1FFFFFF;
    EXPECT_EQ(big.encode() & 0xFF000000u, 0u) << "encode never sets the reserved bits";
}

TEST(hca_interface, cqe_owner_bit_flips_once_per_pass) {
    for (uint8_t log_depth : {0, 3, 10}) {
        const uint32_t depth = 1u << log_depth;
        for (uint32_t index = 0; index < 4 * depth + 3; ++index) {
            const uint32_t pass = index / depth;
            ASSERT_EQ(cqe::owner_for(index, log_depth), (pass & 1) ^ 1)
                << "index " << index << ", depth " << depth << ": pass " << pass;
        }
    }
    EXPECT_EQ(cqe::owner_for(0, 4), 1) << "the first pass writes 1 so a zeroed ring reads empty";
    EXPECT_EQ(cqe::owner_for(0xFFFFFFFF, 0), 0) << "index wrap at 2^32: pass 2^32-1 is odd";
}

TEST(hca_interface, names_follow_libibverbs) {
    EXPECT_STREQ(to_string(wc_status::rem_access_err), "REM_ACCESS_ERR");
    EXPECT_STREQ(to_string(wc_status::wr_flush_err), "WR_FLUSH_ERR");
    EXPECT_EQ(static_cast<int>(wc_status::rem_access_err), 10) << "ibv_wc_status numbering";
    EXPECT_EQ(static_cast<int>(wc_status::general_err), 21);
    EXPECT_STREQ(to_string(cqe_opcode::recv_rdma_with_imm), "recv_rdma_with_imm");
    EXPECT_EQ(static_cast<int>(cqe_opcode::recv), 128) << "IBV_WC_RECV";
    EXPECT_STREQ(to_string(qp_state::rts), "RTS");
    EXPECT_STREQ(to_string(wqe_opcode::atomic_cmp_swp), "atomic_cmp_swp");
}
