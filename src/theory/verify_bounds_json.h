// The verify-bounds report as a JSON document (schema tqlab.bounds/2,
// docs/REFERENCE.md#tqlabbounds2).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "theory/verify_bounds.h"

namespace tqlab {

/// The report as JSON: settings, rows (every number of theory/verify_bounds.h,
/// each check with its z), histograms, summary and all_ok.
nlohmann::json bounds_report_json(const BoundsReport& report);

}  // namespace tqlab
