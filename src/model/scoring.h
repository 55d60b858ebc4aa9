// Which predictions of a chunk the end-to-end measurement scores (model/end_to_end.h says how
// llama.cpp's perplexity scores them): the type, its names ("second-half", "all") and their
// inverse, in one table that the config reader, `tqlab ppl --score` and the results share.
#pragma once

#include <optional>
#include <string_view>

#include "core/name_table.h"

namespace tqlab {

enum class Scoring {
  second_half,  ///< positions ctx/2 .. ctx-2 (the first half is context only)
  all,          ///< positions 0 .. ctx-2
};

inline constexpr auto kScoringNames =
    make_name_table<Scoring>({{Scoring::second_half, "second-half"}, {Scoring::all, "all"}});

/// "second-half", "all".
inline const char* scoring_name(Scoring scoring) { return kScoringNames.name(scoring).data(); }

/// Inverse of scoring_name; nullopt for any other word.
inline std::optional<Scoring> parse_scoring(std::string_view name) { return kScoringNames.parse(name); }

}  // namespace tqlab
