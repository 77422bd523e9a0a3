#include "engine/perftest_peak.h"

#include <algorithm>

namespace hcasim {
namespace perftest {
namespace {

// The j of the pairs, ascending: every mod-th WR index minus one, and the last (the next after
// `j`, or `total` when none is left).
uint64_t next_completion(uint64_t j, uint64_t total, uint64_t mod) {
    if (j + 1 == total) return total;
    return j + mod < total ? j + mod : total - 1;
}
uint64_t first_completion(uint64_t total, uint64_t mod) {
    return mod - 1 < total ? mod - 1 : total - 1;
}

// Whether the times that are stamped (not 0) are in order along the indices from `first`, each
// giving the next (`next`; past the end: done).
template <class Next>
bool stamped_in_order(const std::vector<uint64_t>& times, uint64_t first, Next next) {
    uint64_t prev = 0;
    for (uint64_t k = first; k < times.size(); k = next(k)) {
        if (times[k] == 0) continue;
        if (times[k] < prev) return false;
        prev = times[k];
    }
    return true;
}

// Products of a WR count and a time in picoseconds overflow 64 bits.
__extension__ typedef __int128 wide;

struct point {
    int64_t x;  // WR index
    int64_t y;  // time
};

// Whether the slope from `a` up to `q` is below the slope from `b` up to `q` (both left of and
// below q).
bool flatter(const point& a, const point& b, const point& q) {
    return static_cast<wide>(q.y - a.y) * (q.x - b.x) < static_cast<wide>(q.y - b.y) * (q.x - a.x);
}

}  // namespace

uint64_t peak_time_per_wr_walk(const std::vector<uint64_t>& tposted,
                               const std::vector<uint64_t>& tcompleted, uint64_t list,
                               uint64_t mod) {
    const uint64_t total = tposted.size();
    uint64_t best = UINT64_MAX;
    auto consider = [&](uint64_t i, uint64_t j) {
        if (tcompleted[j] <= tposted[i]) return;  // not stamped, or another QP's
        best = std::min(best, (tcompleted[j] - tposted[i]) / (j - i + 1));
    };
    for (uint64_t i = 0; i < total; i += list) {
        for (uint64_t j = (i + 1 + mod - 1) / mod * mod - 1; j < total; j += mod) consider(i, j);
        if (total % mod) consider(i, total - 1);
    }
    return best;
}

uint64_t peak_time_per_wr(const std::vector<uint64_t>& tposted,
                          const std::vector<uint64_t>& tcompleted, uint64_t list, uint64_t mod) {
    const uint64_t total = tposted.size();
    if (total == 0 || list == 0 || mod == 0) return UINT64_MAX;
    // The i are every list-th index, the j every mod-th minus one and the last; no lists of
    // them are kept (a run's stamps are megabytes).
    const auto next_post = [list](uint64_t i) { return i + list; };
    const auto next_j = [total, mod](uint64_t j) { return next_completion(j, total, mod); };
    if (!stamped_in_order(tposted, 0, next_post) ||
        !stamped_in_order(tcompleted, first_completion(total, mod), next_j))
        return peak_time_per_wr_walk(tposted, tcompleted, list, mod);

    // The posts not stamped (time 0) pair with every stamped completion at or after them; the
    // first of them gives the longest stretch, so the least time per WR.
    uint64_t first_unstamped = UINT64_MAX;
    for (uint64_t i = 0; i < total; i += list)
        if (tposted[i] == 0) {
            first_unstamped = i;
            break;
        }
    uint64_t best = UINT64_MAX;
    std::vector<point> hull;  // upper hull of the stamped posts taken so far, left to right
    uint64_t next = 0;        // the next post to consider (every list-th index)
    for (uint64_t j = first_completion(total, mod); j < total; j = next_j(j)) {
        const uint64_t tc = tcompleted[j];
        if (tc == 0) continue;  // not stamped: no pair counts
        if (first_unstamped <= j) best = std::min(best, tc / (j - first_unstamped + 1));
        // The posts at or before j and before tc: a prefix of the stamped ones, which grows.
        for (; next < total && next <= j; next += list) {
            if (tposted[next] == 0) continue;  // not stamped: paired through first_unstamped
            if (tposted[next] >= tc) break;
            const point p{static_cast<int64_t>(next), static_cast<int64_t>(tposted[next])};
            while (hull.size() >= 2) {
                const point& o = hull[hull.size() - 2];
                const point& a = hull.back();
                // `a` is not above the chord from `o` to `p`: not on the upper hull.
                if (static_cast<wide>(a.x - o.x) * (p.y - o.y) -
                        static_cast<wide>(a.y - o.y) * (p.x - o.x) <
                    0)
                    break;
                hull.pop_back();
            }
            hull.push_back(p);
        }
        if (hull.empty()) continue;
        // The least slope from q down to the hull: along the hull it falls, then rises.
        const point q{static_cast<int64_t>(j) + 1, static_cast<int64_t>(tc)};
        size_t lo = 0, hi = hull.size() - 1;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (flatter(hull[mid + 1], hull[mid], q))
                lo = mid + 1;
            else
                hi = mid;
        }
        const point& h = hull[lo];
        best = std::min(best, static_cast<uint64_t>(q.y - h.y) / static_cast<uint64_t>(q.x - h.x));
    }
    return best;
}

}  // namespace perftest
}  // namespace hcasim
