// Bench for the hot path's reuse of memory: pooled objects (sim/pooled.h) come back fresh with
// their buffers' capacity and release what they hold when their last reference drops;
// recycling_allocator (sim/block_pool.h) serves a vector's next buffer from the one freed before;
// front_vector (sim/front_vector.h) keeps its order through pops and drops at the front, insertions
// and erasures against a std::deque doing the same.
#include "sim/pooled.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "sim/block_pool.h"
#include "sim/front_vector.h"
#include "sim/inline_callback.h"

using namespace hcasim;

namespace {
struct item : pooled<item> {
    int value = 7;
    std::vector<int> buffer;
    continuation<void()> on_done;
    void reuse() {
        std::vector<int> b = std::move(buffer);
        *this = item();
        buffer = std::move(b);
        buffer.clear();
    }
};
struct plain : pooled<plain> {
    int value = 7;
    void reuse() { *this = plain(); }
};
}  // namespace

TEST(pooled, a_released_object_comes_back_fresh_with_its_capacity) {
    const size_t idle_before = item::idle();
    const int* storage = nullptr;
    {
        pool_ptr<item> a = item::make();
        a->value = 42;
        a->buffer.assign(100, 1);
        storage = a->buffer.data();
        pool_ptr<item> b = a;  // two references: the first drop keeps it
        a.reset();
        EXPECT_EQ(item::idle(), idle_before) << "still referenced";
        EXPECT_EQ(b->value, 42);
    }
    EXPECT_EQ(item::idle(), idle_before + 1) << "the last drop puts it in the free list";
    pool_ptr<item> c = item::make();
    EXPECT_EQ(c->value, 7) << "every field back to its default";
    EXPECT_TRUE(c->buffer.empty());
    EXPECT_GE(c->buffer.capacity(), 100u) << "the buffer keeps its capacity";
    c->buffer.assign(50, 2);
    EXPECT_EQ(c->buffer.data(), storage) << "and is used again without an allocation";
}

TEST(pooled, the_last_drop_releases_what_the_object_holds) {
    auto held = std::make_shared<int>(1);
    {
        pool_ptr<item> a = item::make();
        a->on_done = [held] {};
        EXPECT_EQ(held.use_count(), 2);
    }
    EXPECT_EQ(held.use_count(), 1) << "a captured reference goes when the object is released, "
                                      "not when the object is next used";
}

TEST(pooled, copies_copy_the_object_not_its_references) {
    pool_ptr<plain> a = plain::make();
    a->value = 3;
    pool_ptr<plain> b = plain::make();
    *b = *a;
    EXPECT_EQ(b->value, 3);
    const size_t idle = plain::idle();
    a.reset();
    EXPECT_EQ(plain::idle(), idle + 1) << "a's count was not disturbed by the copy";
    b.reset();
    EXPECT_EQ(plain::idle(), idle + 2);
}

TEST(recycling_allocator, a_vector_takes_the_buffer_the_last_one_freed) {
    using vec = std::vector<uint64_t, recycling_allocator<uint64_t>>;
    const uint64_t* first = nullptr;
    {
        vec v(10, 1);
        first = v.data();
    }
    vec w(12, 2);  // 80 and 96 bytes: the same 128-byte class
    EXPECT_EQ(w.data(), first);
    EXPECT_EQ(w[11], 2u);
    vec big(1000, 3);  // beyond the classes: from operator new, freed to it
    EXPECT_EQ(big[999], 3u);
}

TEST(front_vector, keeps_order_like_a_deque) {
    front_vector<int> f;
    EXPECT_TRUE(f.empty());
    std::deque<int> d;
    std::mt19937_64 rng(5);
    for (int step = 0; step < 20000; ++step) {
        const unsigned what = rng() % 10;
        if (what < 5 || d.empty()) {
            const int v = static_cast<int>(rng() % 1000);
            f.push_back(v);
            d.push_back(v);
        } else if (what < 7) {
            f.pop_front();
            d.pop_front();
        } else if (what < 8) {  // several at once, up to all
            const size_t n = rng() % (d.size() + 1);
            f.drop_front(n);
            d.erase(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n));
        } else if (what < 9) {
            const size_t at = rng() % (d.size() + 1);
            f.insert(f.begin() + static_cast<std::ptrdiff_t>(at), -step);
            d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), -step);
        } else if (rng() % 2) {
            const size_t at = rng() % d.size();
            f.erase(f.begin() + static_cast<std::ptrdiff_t>(at));
            d.erase(d.begin() + static_cast<std::ptrdiff_t>(at));
        } else {  // a range: from the front (a prefix acknowledged at once) or inside
            const size_t first = rng() % 2 ? 0 : rng() % d.size();
            const size_t last = first + rng() % (d.size() - first + 1);
            f.erase(f.begin() + static_cast<std::ptrdiff_t>(first),
                    f.begin() + static_cast<std::ptrdiff_t>(last));
            d.erase(d.begin() + static_cast<std::ptrdiff_t>(first),
                    d.begin() + static_cast<std::ptrdiff_t>(last));
        }
        ASSERT_EQ(f.size(), d.size());
        if (!d.empty()) {
            ASSERT_EQ(f.front(), d.front());
            ASSERT_EQ(f.back(), d.back());
        }
    }
    EXPECT_TRUE(std::equal(f.begin(), f.end(), d.begin(), d.end()));
}

TEST(front_vector, dropped_items_release_what_they_hold) {
    auto held = std::make_shared<int>(7);
    front_vector<std::shared_ptr<int>> f;
    for (int i = 0; i < 4; ++i) f.push_back(held);
    ASSERT_EQ(held.use_count(), 5);
    f.drop_front(2);
    EXPECT_EQ(held.use_count(), 3) << "two dropped at once let go of theirs";
    f.pop_front();
    EXPECT_EQ(held.use_count(), 2) << "and one popped";
    f.drop_front(1);
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(held.use_count(), 1);
}
