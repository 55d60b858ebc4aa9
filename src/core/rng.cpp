// splitmix64 and xoshiro256** (see rng.h for the sources).
#include "core/rng.h"

#include <bit>
#include <cassert>
#include <cmath>

namespace tqlab {

std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t derive_seed(std::initializer_list<std::uint64_t> parts) {
  // Each part is folded into the running hash and then mixed by a full
  // splitmix64 step. Since the step is a bijection of its state, two part lists
  // that differ only in one position give different hashes at that position and
  // stay different; folding in the count at the end separates (0) from (0, 0).
  std::uint64_t hash = 0x74716c6162736565ULL;  // "tqlabsee": a domain tag, not 0
  for (const std::uint64_t part : parts) {
    std::uint64_t state = hash ^ part;
    hash = splitmix64_next(state);
  }
  std::uint64_t state = hash ^ static_cast<std::uint64_t>(parts.size());
  return splitmix64_next(state);
}

Rng::Rng(std::uint64_t seed) {
  // splitmix64 never yields four zero words in a row, so the state is valid.
  std::uint64_t sm_state = seed;
  for (auto& word : state_) word = splitmix64_next(sm_state);
}

Rng Rng::from_state(const std::array<std::uint64_t, 4>& state) {
  assert((state[0] | state[1] | state[2] | state[3]) != 0 && "xoshiro state must not be all zero");
  Rng rng;
  rng.state_ = state;
  return rng;
}

std::uint64_t Rng::next_u64() {
  auto& s = state_;
  const std::uint64_t result = std::rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = std::rotl(s[3], 45);
  return result;
}

double Rng::uniform() {
  // The top 53 bits fill a double's mantissa exactly: every value k * 2^-53.
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Rng::gaussian() {
  if (has_spare_gaussian_) {
    has_spare_gaussian_ = false;
    return spare_gaussian_;
  }
  // Marsaglia's polar method rather than Box-Muller: it needs only log and
  // sqrt (no cos/sin), fewer libm functions whose last bit could differ
  // between C libraries. sqrt is correctly rounded by IEEE 754. The sum of
  // squares is an explicit fma because the compiler (C++ allows contraction)
  // would otherwise fuse it on FMA machines only, and the last bit of
  // radius2 decides rejections and every sample.
  double u = 0.0;
  double v = 0.0;
  double radius2 = 0.0;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    radius2 = std::fma(u, u, v * v);
  } while (radius2 >= 1.0 || radius2 == 0.0);
  const double factor = std::sqrt(-2.0 * std::log(radius2) / radius2);
  spare_gaussian_ = v * factor;
  has_spare_gaussian_ = true;
  return u * factor;
}

bool Rng::coin() { return (next_u64() >> 63) != 0; }

}  // namespace tqlab
