// Deterministic randomness for every random object in tqlab.
//
// Every random object (Hadamard signs, Haar matrix, QJL projection)
// takes its seed from derive_seed(run seed, role, layer, kv head, block index),
// and Gaussian samples come from our own generator rather than
// std::normal_distribution (whose output differs between standard libraries),
// so the same spec and seed give the same random objects on every machine.
//
// Sources: splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; Vigna's splitmix64.c) and xoshiro256** 1.0
// (Blackman, Vigna, "Scrambled linear pseudorandom number generators", 2018/2021),
// seeded with splitmix64 as its authors recommend.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

namespace tqlab {

/// The standard splitmix64 step: advances `state` by the golden-ratio gamma
/// 0x9e3779b97f4a7c15 and returns the mixed new state. From state 0 the
/// outputs are 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, ...
std::uint64_t splitmix64_next(std::uint64_t& state);

/// Chain-mixes `parts` into one 64-bit seed, e.g.
/// derive_seed({run_seed, role, layer, kv_head, block}). Order-sensitive
/// ((1,0) and (0,1) differ), length-sensitive ((0) and (0,0) differ), and
/// every input bit changes about half of the output bits.
std::uint64_t derive_seed(std::initializer_list<std::uint64_t> parts);

/// xoshiro256** generator whose 256-bit state is filled by four splitmix64
/// steps from the seed. Not thread-safe; make one per random object.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  /// A generator with exactly this xoshiro256** state (not all zero), for
  /// checking against the published reference outputs.
  static Rng from_state(const std::array<std::uint64_t, 4>& state);

  /// The next 64 raw bits.
  std::uint64_t next_u64();

  /// Uniform in [0, 1) with 53 random bits: (next_u64() >> 11) * 2^-53.
  double uniform();

  /// A standard normal N(0, 1) sample (Marsaglia's polar method; the second
  /// value of each accepted pair is returned by the next call).
  double gaussian();

  /// One random bit: the top bit of next_u64().
  bool coin();

 private:
  Rng() = default;

  std::array<std::uint64_t, 4> state_{};
  double spare_gaussian_ = 0.0;
  bool has_spare_gaussian_ = false;
};

}  // namespace tqlab
