// The rules an allocation is compared with at the same budget.
//
//   uniform:  every unit the same candidate (what a cache does by default).
//   boundary: the folklore "keep the first and last layers at higher precision" (serving
//             engines that skip the first and last two layers, or raise their K/V types): with r
//             the highest rung of the ladder (the candidates by ascending uniform bytes) whose
//             uniform cost fits the budget, the first and last E layers get rung r + 1 (E = 2,
//             or 1 below 8 layers, or 0 below 4), the others rung r; then, while over budget,
//             the middle layers go down one rung at a time, the most central first (ties: the
//             lower layer), cycling until the budget holds; only when no middle layer can go
//             lower do the boundary layers. Keys and values, and every head, of a layer alike.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocate/profile.h"

namespace tqlab {

/// Candidate indices by ascending uniform bytes (ties: list order).
std::vector<int> ladder_order(const Profile& profile);

/// Every unit at candidate `candidate`.
std::vector<int> uniform_choice(const Profile& profile, int candidate);

/// The ladder candidate with the most bytes whose uniform choice fits `capacity` (bytes); -1: none.
int uniform_below(const Profile& profile, std::uint64_t capacity);

/// Layers the boundary rule raises at each end of a model of `layers` layers.
int boundary_layers(int layers);

/// The boundary rule's choice within `capacity` bytes; nullopt when no uniform rung fits.
std::optional<std::vector<int>> boundary_choice(const Profile& profile, std::uint64_t capacity);

}  // namespace tqlab
