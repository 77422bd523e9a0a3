// Bench for inline_callback and continuation: small callables are kept inline and large ones on
// the heap (in pooled blocks), all run, move and are destroyed exactly once (counted by a probe
// that every copy and move touches); continuations pass arguments and nest.
#include "sim/inline_callback.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include <boost/intrusive_ptr.hpp>
#include <systemc>

using namespace hcasim;

namespace {
struct probe {
    int* alive;
    int* runs;
    explicit probe(int* a, int* r) : alive(a), runs(r) { ++*alive; }
    probe(const probe& o) : alive(o.alive), runs(o.runs) { ++*alive; }
    probe(probe&& o) noexcept : alive(o.alive), runs(o.runs) { ++*alive; }
    ~probe() { --*alive; }
    void operator()() { ++*runs; }
};
struct big_probe : probe {
    using probe::probe;
    std::array<char, 200> ballast{};
};
}  // namespace

TEST(inline_callback, small_and_large_callables_run_move_and_die_once) {
    int alive = 0, runs = 0;
    {
        inline_callback a(probe(&alive, &runs));
        inline_callback b(big_probe(&alive, &runs));
        EXPECT_EQ(alive, 2) << "one live callable each, inline or on the heap";
        a();
        b();
        inline_callback c(std::move(a));
        inline_callback d;
        d = std::move(b);
        EXPECT_FALSE(a);
        EXPECT_FALSE(b);
        EXPECT_EQ(alive, 2) << "moves hand the callable over, they do not copy it";
        c();
        d();
        d = std::move(c);
        EXPECT_EQ(alive, 1) << "assigning over a callback destroys the old one";
    }
    EXPECT_EQ(runs, 4);
    EXPECT_EQ(alive, 0) << "every callable destroyed exactly once";
}

TEST(inline_callback, captures_as_the_units_use_them) {
    std::vector<int> seen;
    auto shared = std::make_shared<int>(7);
    std::function<void(int)> sink = [&](int v) { seen.push_back(v); };
    std::vector<inline_callback> queue;
    for (int i = 0; i < 100; ++i)
        queue.emplace_back([shared, sink, i] { sink(*shared + i); });  // grows and moves the vector
    for (auto& cb : queue) cb();
    ASSERT_EQ(seen.size(), 100u);
    EXPECT_EQ(seen[99], 106);
    queue.clear();
    EXPECT_EQ(shared.use_count(), 1) << "captured shared_ptrs released with their callbacks";
}

TEST(inline_callback, emplace_builds_in_place_and_replaces_once) {
    int alive = 0, runs = 0;
    {
        inline_callback a;
        a.emplace(probe(&alive, &runs));
        EXPECT_EQ(alive, 1);
        a.emplace(big_probe(&alive, &runs));
        EXPECT_EQ(alive, 1) << "the old callable destroyed when replaced";
        a();
        inline_callback b(probe(&alive, &runs));
        a.emplace(std::move(b));
        EXPECT_FALSE(b);
        EXPECT_EQ(alive, 1) << "an inline_callback is moved in, not wrapped";
        a();
    }
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(alive, 0);
}

TEST(continuation, passes_arguments_returns_results_and_nests) {
    std::vector<int> words{1, 2, 3};
    continuation<int(const std::vector<int>&, int)> sum = [](const std::vector<int>& w, int k) {
        int s = 0;
        for (int v : w) s += v * k;
        return s;
    };
    EXPECT_EQ(sum(words, 2), 12);
    // A continuation that captures the one it was handed, as the units chain them.
    auto owned = std::make_unique<int>(5);
    continuation<void(int)> inner = [p = std::move(owned), &words](int v) {
        words.push_back(*p + v);
    };
    continuation<void(int)> outer = [inner = std::move(inner)](int v) mutable { inner(v * 10); };
    continuation<void(int)> moved = std::move(outer);
    EXPECT_FALSE(outer);
    moved(3);
    EXPECT_EQ(words.back(), 35);
}

namespace {
struct counted {
    int refs = 0;
    friend void intrusive_ptr_add_ref(counted* p) noexcept { ++p->refs; }
    friend void intrusive_ptr_release(counted* p) noexcept { --p->refs; }
};
}  // namespace

TEST(inline_callback, keeps_captures_of_times_and_const_pointers_inline) {
    // The units capture sc_time values and const message pointers, whose copy constructors are
    // not declared noexcept: such callables still fit inside (no pooled block per stage).
    const sc_core::sc_time at(5, sc_core::SC_NS);
    counted c;
    const boost::intrusive_ptr<counted> msg(&c);
    auto stage = [at, msg] { return at.value() + static_cast<uint64_t>(msg->refs); };
    static_assert(!std::is_nothrow_move_constructible<decltype(stage)>::value,
                  "the case this checks: a capture whose move may throw, as declared");
    EXPECT_TRUE(inline_callback::keeps_inline<decltype(stage)>);
    EXPECT_TRUE((continuation<void(int)>::keeps_inline<decltype(stage)>));
    EXPECT_FALSE(inline_callback::keeps_inline<big_probe>) << "larger than 160 bytes: a block";
    EXPECT_EQ(c.refs, 2) << "the pointer and the stage's copy";
    uint64_t seen = 0;
    {
        inline_callback a([stage, &seen] { seen = stage(); });
        inline_callback b(std::move(a));
        EXPECT_FALSE(a);
        EXPECT_EQ(c.refs, 3) << "moved by a copy of the const pointer, the moved-from released";
        b();
    }
    EXPECT_EQ(seen, at.value() + 3);
    EXPECT_EQ(c.refs, 2) << "the callback's copy released with it";
}

TEST(block_pool, a_freed_block_serves_the_next_callable_of_its_size_class) {
    void* a = block_pool::allocate(200);
    void* b = block_pool::allocate(200);
    EXPECT_NE(a, b);
    block_pool::deallocate(a, 200);
    EXPECT_EQ(block_pool::allocate(193), a) << "same 64-byte class: the block is reused";
    void* c = block_pool::allocate(300);
    EXPECT_NE(c, a);
    block_pool::deallocate(a, 193);
    block_pool::deallocate(b, 200);
    block_pool::deallocate(c, 300);
    void* huge = block_pool::allocate(5000);  // beyond the classes: operator new
    block_pool::deallocate(huge, 5000);
}
