// A Zipf distribution over ranks 0..n-1 (rank k drawn with probability proportional to
// 1 / (k + 1)^s), sampled by inverting its cumulative distribution: the skewed access pattern of
// key-value and caching workloads (YCSB's default exponent is 0.99). Deterministic: a sample is
// a function of the 64-bit random number it is given.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hcasim {

class zipf_ranks {
  public:
    zipf_ranks() = default;
    zipf_ranks(uint64_t n, double s) : m_cdf(std::max<uint64_t>(n, 1)) {
        double sum = 0;
        for (uint64_t k = 0; k < m_cdf.size(); ++k) {
            sum += 1.0 / std::pow(static_cast<double>(k + 1), s);
            m_cdf[k] = sum;
        }
        for (double& c : m_cdf) c /= sum;
    }
    bool empty() const { return m_cdf.empty(); }
    uint64_t sample(uint64_t random) const {
        const double u = static_cast<double>(random >> 11) * 0x1.0p-53;
        const auto it = std::upper_bound(m_cdf.begin(), m_cdf.end(), u);
        return std::min<uint64_t>(static_cast<uint64_t>(it - m_cdf.begin()), m_cdf.size() - 1);
    }

  private:
    std::vector<double> m_cdf;
};

}  // namespace hcasim
