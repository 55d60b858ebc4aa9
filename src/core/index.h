// Indexing standard containers by signed integers.
//
// Layer indices, heads, seeds and (run, seed) numbers are ints (they come from
// shapes and configs, and take part in arithmetic that may go below zero),
// while std::vector is indexed by std::size_t. at(v, i) is v[i] for such an
// index, with the range asserted, instead of a static_cast at every use.
#pragma once

#include <cassert>
#include <concepts>
#include <cstddef>

namespace tqlab {

/// container[index] for a signed or unsigned integer index in [0, size).
template <typename Container, std::integral Index>
constexpr decltype(auto) at(Container&& container, Index index) {
  assert(index >= 0 && static_cast<std::size_t>(index) < container.size());
  return container[static_cast<std::size_t>(index)];
}

}  // namespace tqlab
