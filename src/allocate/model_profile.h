// The model profile (allocate/profile.h): every candidate on every unit, with only that unit
// quantized, end to end through the config's model block — a teacher-forced float32 prefill of
// each chunk of its tokens, the output distribution compared with the exact cache's
// (model/end_to_end.h): per (unit, candidate, seed) one pass over every chunk, its e2e_kld and
// e2e_ln_ppl_ratio recorded.
//
// In an engine's numerics (ModelProfileOptions::numerics, llama.cpp) the unit's layer runs under
// the engine's own cache and attention (engine/engine.h), bound to the candidate's type for the
// unit's role and the engine's f32 for the other (llama.cpp: Q/K rotated when K is quantized, V
// and the output when V is, the query converted to K's type); every other layer, and at layer-head
// granularity every other head of the layer, reads its keys and values exact. llama.cpp's rotation
// and query conversion act on each head alone (blocks of at most head_dim, engine/llamacpp_engine.h),
// so a head's unit in its numerics is what that head computes in a layer of the type.
//
// The layers before the unit's layer see an exact cache, so they compute the base's floats
// again: the base keeps each chunk's residual stream entering every layer, and the unit's pass
// starts at its layer from it (EndToEndSession::run(cache, layer)), the same floats as a pass
// from layer 0. With units spread evenly over L layers a pass then computes (L + 1) / 2L of the
// layers; Profile::layers_computed_share records the share, and the time saved is measured in
// docs/PERFORMANCE.md. Memory for it: chunks x (layers - 1) x ctx x hidden floats.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "allocate/profile.h"
#include "sweep/sweep_config.h"

namespace tqlab {

struct ModelProfileOptions {
  std::vector<std::string> candidates;  ///< canonical specs
  /// Profile::numerics: "tqlab", or an engine with its own attention (engine/engine.h, "llama.cpp"),
  /// whose cache types the candidates are (as its quantizer_spec spells them).
  std::string numerics = "tqlab";
  Granularity granularity = Granularity::layer_head;
  int threads = 0;
  bool reuse_prefix = true;
  /// The passes (allocate/profile_work.h) to measure; nullopt: every one. The other cells stay 0;
  /// layers_computed_share is then over the passes measured. No pass: no base pass either.
  std::optional<std::vector<int>> passes;  ///< false: every pass from layer 0 (the same floats, to measure the saving)
  /// After each chunk of each pass: (chunks done, chunks in all, base pass included).
  std::function<void(std::size_t done, std::size_t total)> on_progress;
};

struct SweepModel;

/// `model`: the config's model block opened (sweep/sweep_model.h); the config's window mode and
/// seeds; its runs are not used. InputError when a quantizer refuses the cache's values.
Profile measure_model_profile(const SweepConfig& config, const SweepModel& model, const ModelProfileOptions& options);

}  // namespace tqlab
