// The random objects a quantizer builds for a context — rotations and QJL
// projections — built once and shared, immutable, by encode and decode, by
// every run of a sweep that meets the same (spec, seed, layer, head), and by
// every thread. Keyed by everything that determines the object: its kind, its
// size and its derived seed (core/rng.h), so two quantizers that would build
// the same object share it, and a cached object is bit for bit the one a
// fresh build gives.
//
// Process-wide, thread-safe, bounded in bytes: when the budget is exceeded the
// least recently used entries are dropped (holders keep theirs alive). An
// object is built outside the lock, once, by the first thread to ask;
// threads asking for other objects do not wait for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "quant/qjl.h"
#include "quant/rotation.h"

namespace tqlab {

/// Rotation::make(kind, dim, seed), cached.
std::shared_ptr<const Rotation> cached_rotation(RotationKind kind, int dim, std::uint64_t seed);

/// QjlSketch(dim, projections, seed), cached.
std::shared_ptr<const QjlSketch> cached_qjl_sketch(int dim, int projections, std::uint64_t seed);

struct CodecCacheStats {
  std::size_t builds = 0;   ///< objects built since the start (or the last clear)
  std::size_t entries = 0;  ///< objects held now
  std::size_t bytes = 0;    ///< their approximate size
};
CodecCacheStats codec_cache_stats();

/// Largest size held (default 256 MiB); 0 keeps nothing. Drops entries beyond it now.
void set_codec_cache_budget(std::size_t bytes);
/// Drops every entry and zeroes the counters (for tests and benchmarks).
void clear_codec_cache();

}  // namespace tqlab
