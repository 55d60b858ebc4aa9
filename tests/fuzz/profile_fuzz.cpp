// libFuzzer target. An allocation profile read back (allocate/profile_json.h): what
// `tqlab allocate --profile-file` and the profile cache read, under io/read_back.h's rule. A
// profile that passes is used as allocate uses it: checked against itself, summed per layer
// (offline), its cheapest and dearest choices priced, every candidate's damage taken.
// Input: a tqlab.profile/1 document's text (or its "profile" object alone).
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "allocate/objective.h"
#include "allocate/profile.h"
#include "allocate/profile_json.h"
#include "fuzz_support.h"
#include "io/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_success_or_input_error([&] {
    const nlohmann::json document = parse_json_text(text, "/fuzz/profile.json", "profile");
    const bool wrapped = document.is_object() && document.contains("profile");
    const Profile profile = profile_from_json(wrapped ? document.at("profile") : document, "/fuzz/profile.json");
    check_profile_fits(profile, profile, "/fuzz/profile.json");
    if (profile.kind == ProfileKind::offline) (void)profile_by_layer(profile);
    for (int c : {0, static_cast<int>(profile.candidates.size()) - 1}) {
      const std::vector<int> choice(profile.units.size(), c);
      const double bits = profile.bits_of(choice);
      if (!(bits > 0 && bits <= 64)) fuzz::finding("a profile read back prices a choice outside (0, 64] bits", "");
    }
    const Objective objective;
    for (std::size_t u = 0; u < profile.units.size(); ++u) {
      for (std::size_t c = 0; c < profile.candidates.size(); ++c) {
        if (!std::isfinite(unit_damage(profile, objective, u, c))) {
          fuzz::finding("a profile read back gives a damage that is not finite", "");
        }
      }
    }
  });
  return 0;
}
