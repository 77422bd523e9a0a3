// Physical memory of one host: a flat byte-addressed store of `size` bytes. Only what was ever
// written holds bytes: a hash map of 4 KiB frame number -> frame, and in each frame only the
// 256-byte granules written since they were last zeroed; reading anything else returns zeros, as
// freshly zeroed DRAM would. Simulator memory therefore grows with the touched bytes, not with the
// simulated size: a 1 TiB host costs nothing until used, and a frame holding one 8-byte
// doorbell record or a two-entry buffer table costs one granule, not 4 KiB. A frame whose granules
// are all held (a data buffer written through) keeps them as one block of 4 KiB instead: the same
// bytes and the same count of stored bytes, copied by one memcpy per frame rather than one per
// granule.
// A frame may instead be attached to bytes outside: 4 KiB the simulator shares with a real
// program (a verbs application attached to `hcasim serve`, engine/app_program.h). Every read and
// write of an attached frame goes to those bytes, so what the HCA DMA-writes appears in the
// program's memory and what the program writes is what the HCA reads.
// Abstracted: DRAM timing (the root complex adds one latency per access), ECC, NUMA.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace hcasim {

class phys_mem {
  public:
    static constexpr uint64_t frame_bytes = 4096;
    static constexpr uint64_t granule_bytes = 256;

    explicit phys_mem(uint64_t size) : m_size(size) {}
    // Not copied: a copy would remember a frame of the original (m_last).
    phys_mem(const phys_mem&) = delete;
    phys_mem& operator=(const phys_mem&) = delete;

    uint64_t size() const { return m_size; }
    bool contains(uint64_t addr, uint64_t len) const {
        return addr <= m_size && len <= m_size - addr;
    }
    // Out-of-range accesses are the caller's to refuse (see contains()); these assume in range.
    void read(uint64_t addr, uint8_t* out, uint64_t len) const;
    void write(uint64_t addr, const uint8_t* data, uint64_t len);
    // Clears [addr, addr+len); frames cleared entirely drop their storage.
    void zero(uint64_t addr, uint64_t len);

    // Frame `frame` (a frame number) holds its bytes at `bytes` (frame_bytes of them, owned by the
    // caller, who detaches the frame before they go) instead of in this store.
    void attach(uint64_t frame, uint8_t* bytes);
    void detach(uint64_t frame);
    uint64_t attached_frames() const { return m_attached.size(); }

    uint64_t read_u64(uint64_t addr) const;
    void write_u64(uint64_t addr, uint64_t value);

    // Frames that hold bytes, and the bytes of the granules they hold.
    uint64_t stored_frames() const { return m_frames.size(); }
    uint64_t stored_bytes() const { return m_granules * granule_bytes; }

  private:
    static constexpr unsigned granules = frame_bytes / granule_bytes;
    using granule = std::array<uint8_t, granule_bytes>;
    using block = std::array<uint8_t, frame_bytes>;
    // Either granules (those not held are null) or, when all are held, one block (the granules
    // then null): `held` counts the granules either way.
    struct frame {
        std::array<std::unique_ptr<granule>, granules> g;
        std::unique_ptr<block> whole;
        unsigned held = 0;
    };
    // A frame holding all its granules keeps them as one block; the way back, before some of
    // them are dropped.
    static void to_block(frame& f);
    static void to_granules(frame& f);
    // The store's own bytes (no attached frame in the range).
    void read_stored(uint64_t addr, uint8_t* out, uint64_t len) const;
    void write_stored(uint64_t addr, const uint8_t* data, uint64_t len);
    void zero_stored(uint64_t addr, uint64_t len);
    // Splits [addr, addr + len) at frame boundaries: fn(address, bytes, bytes done before,
    // the attached bytes of the frame or nullptr).
    template <class Fn>
    void for_each_frame(uint64_t addr, uint64_t len, Fn&& fn) const;

    // The stored frame `number`, or nullptr; made when missing (writes) or not (reads).
    frame* find_frame(uint64_t number);
    const frame* find_frame(uint64_t number) const;

    uint64_t m_size;
    std::unordered_map<uint64_t, frame> m_frames;
    uint64_t m_granules = 0;
    // The frame found last (the requests of a transfer, a ring's entries, stay in one frame): a
    // map node, so it stays where it is until that frame is erased, which forgets it.
    mutable uint64_t m_last_number = ~uint64_t{0};
    mutable frame* m_last = nullptr;
    std::unordered_map<uint64_t, uint8_t*> m_attached;
};

}  // namespace hcasim
