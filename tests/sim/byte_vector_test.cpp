// sim/byte_vector: the byte buffer of DMA data and message payloads behaves as std::vector<uint8_t>
// does for everything the hot path uses (assign, insert anywhere, resize with a value, copies,
// moves, swap, clear keeping the capacity, comparison), checked against std::vector on random
// operations; growing by resize(n) keeps the bytes already there.
#include "sim/byte_vector.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/splitmix.h"

using hcasim::byte_vector;

TEST(byte_vector, behaves_as_a_vector_of_bytes) {
    hcasim::splitmix rng{7};
    byte_vector b;
    std::vector<uint8_t> v;
    for (int step = 0; step < 5000; ++step) {
        const uint64_t n = rng.next() % 300;
        const auto value = static_cast<uint8_t>(rng.next());
        std::vector<uint8_t> src(n);
        for (auto& x : src) x = static_cast<uint8_t>(rng.next());
        switch (rng.next() % 8) {
            case 0:
                b.assign(src.begin(), src.end());
                v.assign(src.begin(), src.end());
                break;
            case 1: {
                const size_t at = v.empty() ? 0 : rng.next() % (v.size() + 1);
                b.insert(b.begin() + at, src.begin(), src.end());
                v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), src.begin(), src.end());
                break;
            }
            case 2:
                b.resize(n, value);
                v.resize(n, value);
                break;
            case 3:
                b.assign(n, value);
                v.assign(n, value);
                break;
            case 4: {
                byte_vector copy = b;
                EXPECT_EQ(copy, b);
                byte_vector moved = std::move(copy);
                b.clear();
                b = moved;
                break;
            }
            case 5: {
                byte_vector other(src.begin(), src.end());
                b.swap(other);
                EXPECT_EQ(other, v) << "the swapped-out bytes";
                v = src;
                break;
            }
            case 6: {
                const size_t cap = b.capacity();
                b.clear();
                v.clear();
                EXPECT_EQ(b.capacity(), cap) << "clear keeps the buffer";
                break;
            }
            case 7:
                b.push_back(value);
                v.push_back(value);
                break;
        }
        ASSERT_EQ(b.size(), v.size()) << "step " << step;
        ASSERT_EQ(b, v) << "step " << step;
        ASSERT_EQ(b.to_vector(), v);
    }
}

TEST(byte_vector, growing_keeps_the_bytes_there) {
    byte_vector b{1, 2, 3};
    b.resize(1000);  // the new bytes are not initialised: only the old ones are checked
    EXPECT_EQ(b.size(), 1000u);
    EXPECT_EQ(b[0], 1);
    EXPECT_EQ(b[1], 2);
    EXPECT_EQ(b[2], 3);
    b.resize(2);
    b.resize(4, 9);
    EXPECT_EQ(b, (std::vector<uint8_t>{1, 2, 9, 9})) << "resize with a value fills only the growth";
    EXPECT_NE(b, (std::vector<uint8_t>{1, 2, 9}));
}
