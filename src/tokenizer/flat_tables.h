// Open-addressing hash tables for the tokenizer's hot lookups: token ids by
// string (the vocabulary), merge rules by pair of ids, and words already
// tokenized. One array of slots each, linear probing, strings kept in one
// arena, nothing allocated per entry: with std::unordered_map, following its
// per-node pointers took most of the encoding time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tqlab::tokenizer {

/// A map from a pair of int32 ids to a trivially copyable Value.
template <typename Value>
class PairTable {
 public:
  /// Inserts or replaces the value of (left, right).
  void put(std::int32_t left, std::int32_t right, Value value) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    Slot& slot = slots_[find_slot(key(left, right))];
    if (slot.key == kEmpty) ++count_;
    slot = {key(left, right), value};
  }
  /// The value of (left, right), or nullptr.
  const Value* find(std::int32_t left, std::int32_t right) const {
    if (slots_.empty()) return nullptr;
    const Slot& slot = slots_[find_slot(key(left, right))];
    return slot.key == kEmpty ? nullptr : &slot.value;
  }
  std::size_t size() const { return count_; }
  void reserve(std::size_t count) {
    while (slots_.size() < 2 * count) grow();
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key = kEmpty;
    Value value{};
  };
  static std::uint64_t key(std::int32_t left, std::int32_t right) {
    return (std::uint64_t{static_cast<std::uint32_t>(left)} << 32) | static_cast<std::uint32_t>(right);
  }
  // The slot holding `k`, or the empty slot where it would go (the table is never full).
  std::size_t find_slot(std::uint64_t k) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (slots_[i].key != k && slots_[i].key != kEmpty) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    for (const Slot& slot : old) {
      if (slot.key != kEmpty) slots_[find_slot(slot.key)] = slot;
    }
  }
  std::vector<Slot> slots_;
  std::size_t count_ = 0;
};

/// A map from byte strings to a trivially copyable Value; the strings are copied in.
template <typename Value>
class StringTable {
 public:
  /// Inserts `text` with `value`, or replaces the value when `text` is there.
  void put(std::string_view text, Value value) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const std::uint64_t hash = hash_of(text);
    Slot& slot = slots_[find_slot(text, hash)];
    if (slot.length == kEmpty) {
      slot.offset = arena_.size();
      slot.length = static_cast<std::uint32_t>(text.size());
      slot.hash = hash;
      arena_.append(text);
      ++count_;
    }
    slot.value = value;
  }
  /// The value of `text`, or nullptr.
  const Value* find(std::string_view text) const {
    if (slots_.empty()) return nullptr;
    const Slot& slot = slots_[find_slot(text, hash_of(text))];
    return slot.length == kEmpty ? nullptr : &slot.value;
  }
  std::size_t size() const { return count_; }
  void reserve(std::size_t count) {
    while (slots_.size() < 2 * count) grow();
  }
  /// Calls visit(text, value) for every entry, in no particular order.
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const Slot& slot : slots_) {
      if (slot.length != kEmpty) visit(std::string_view(arena_).substr(slot.offset, slot.length), slot.value);
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t offset = 0;
    std::uint32_t length = kEmpty;
    Value value{};
  };
  static std::uint64_t hash_of(std::string_view text) { return std::hash<std::string_view>()(text); }
  std::size_t find_slot(std::string_view text, std::uint64_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = static_cast<std::size_t>(hash * 0x9E3779B97F4A7C15ull >> 20) & mask;
    for (;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.length == kEmpty) return i;
      if (slot.hash == hash && slot.length == text.size() && arena_.compare(slot.offset, slot.length, text) == 0) {
        return i;
      }
    }
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    for (const Slot& slot : old) {
      if (slot.length == kEmpty) continue;
      const std::size_t mask = slots_.size() - 1;
      std::size_t i = static_cast<std::size_t>(slot.hash * 0x9E3779B97F4A7C15ull >> 20) & mask;
      while (slots_[i].length != kEmpty) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  std::string arena_;
  std::size_t count_ = 0;
};

}  // namespace tqlab::tokenizer
