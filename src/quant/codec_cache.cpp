#include "quant/codec_cache.h"

#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <variant>

namespace tqlab {
namespace {

constexpr std::size_t kDefaultBudget = std::size_t{256} << 20;

enum class ObjectKind { rotation, qjl_sketch };

// (object kind, rotation kind or projections, dim, seed).
using Key = std::tuple<int, int, int, std::uint64_t>;
using Object = std::variant<std::shared_ptr<const Rotation>, std::shared_ptr<const QjlSketch>>;

struct Slot {
  std::once_flag built;
  Object object;
  std::size_t bytes = 0;
};

class Cache {
 public:
  template <typename Build>
  Object get(const Key& key, std::size_t bytes, Build build) {
    std::shared_ptr<Slot> slot;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto found = entries_.find(key);
      if (found == entries_.end()) {
        found = entries_.emplace(key, Entry{std::make_shared<Slot>(), recency_.end()}).first;
        found->second.slot->bytes = bytes;
        bytes_ += bytes;
      } else {
        recency_.erase(found->second.recency);
      }
      recency_.push_front(key);
      found->second.recency = recency_.begin();
      slot = found->second.slot;
      evict_locked();
    }
    std::call_once(slot->built, [&] {
      slot->object = build();
      const std::lock_guard<std::mutex> lock(mutex_);
      ++builds_;
    });
    return slot->object;
  }

  CodecCacheStats stats() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return {builds_, entries_.size(), bytes_};
  }

  void set_budget(std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    budget_ = bytes;
    evict_locked();
  }

  void clear() {
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    recency_.clear();
    bytes_ = 0;
    builds_ = 0;
  }

 private:
  struct Entry {
    std::shared_ptr<Slot> slot;
    std::list<Key>::iterator recency;
  };

  // Drops least recently used entries beyond the budget (never the one just asked for).
  void evict_locked() {
    while (bytes_ > budget_ && recency_.size() > 1) {
      const auto oldest = entries_.find(recency_.back());
      bytes_ -= oldest->second.slot->bytes;
      entries_.erase(oldest);
      recency_.pop_back();
    }
  }

  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::list<Key> recency_;  // most recent first
  std::size_t bytes_ = 0;
  std::size_t budget_ = kDefaultBudget;
  std::size_t builds_ = 0;
};

Cache& cache() {
  static Cache instance;
  return instance;
}

std::size_t rotation_bytes(RotationKind kind, int dim) {
  const auto n = static_cast<std::size_t>(dim);
  switch (kind) {
    case RotationKind::haar: return 2 * n * n * sizeof(float);
    case RotationKind::none: return 0;
    default: return 2 * n * sizeof(float);  // sign vectors
  }
}

}  // namespace

std::shared_ptr<const Rotation> cached_rotation(RotationKind kind, int dim, std::uint64_t seed) {
  const Key key{static_cast<int>(ObjectKind::rotation), static_cast<int>(kind), dim, seed};
  const Object object = cache().get(key, rotation_bytes(kind, dim), [&]() -> Object {
    return std::shared_ptr<const Rotation>(Rotation::make(kind, dim, seed));
  });
  return std::get<std::shared_ptr<const Rotation>>(object);
}

std::shared_ptr<const QjlSketch> cached_qjl_sketch(int dim, int projections, std::uint64_t seed) {
  const Key key{static_cast<int>(ObjectKind::qjl_sketch), projections, dim, seed};
  // S, its transpose and a margin per row (QjlSketch::bytes), known before it is built.
  const std::size_t bytes =
      static_cast<std::size_t>(projections) * (2 * static_cast<std::size_t>(dim) + 1) * sizeof(float);
  const Object object = cache().get(key, bytes, [&]() -> Object {
    return std::shared_ptr<const QjlSketch>(std::make_shared<QjlSketch>(dim, projections, seed));
  });
  return std::get<std::shared_ptr<const QjlSketch>>(object);
}

CodecCacheStats codec_cache_stats() { return cache().stats(); }

void set_codec_cache_budget(std::size_t bytes) { cache().set_budget(bytes); }

void clear_codec_cache() { cache().clear(); }

}  // namespace tqlab
