// The quantizer specs an allocation chooses from.
//
// The default ladder is TurboQuant with norm correction at every bit width from 2 to 8 and
// fp16 on top: tq:b=2,nc, tq:b=3,nc, ..., tq:b=8,nc, fp16. Any list of specs may replace it
// (baselines included: kivi, q4_0, fp8_e4m3, ...). A candidate's bits per value are never a
// formula: they come from the bytes its quantizer packs on each unit (allocate/profile.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tqlab {

/// tq:b=2,nc ... tq:b=8,nc, fp16.
std::vector<std::string> default_candidates();

/// Splits a comma-separated list of specs. Specs hold commas themselves ("tq:b=3,nc"), so a
/// comma starts a new spec only when what follows it is a method name or holds a ':' (spec
/// options are neither): "tq:b=3,nc,fp16" is {"tq:b=3,nc", "fp16"}. InputError naming
/// `option` on an empty list or an empty part.
std::vector<std::string> split_candidate_list(std::string_view text, std::string_view option);

/// Each spec parsed, checked against every head dim in `dims` and made canonical for them
/// (for the one dim when there is one, else dim-free), in the order given. InputError naming
/// `option`, the spec and the dim for a spec that does not parse or cannot take a dim, and for
/// two specs that are one configuration ("tq:b=3,block=64" and "tq:b=3" at dim 64).
std::vector<std::string> canonical_candidates(const std::vector<std::string>& specs, const std::vector<int>& dims,
                                              std::string_view option);

}  // namespace tqlab
