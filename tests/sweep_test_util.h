// Small KV dumps written for sweep tests, and a sweep run on them from a config document.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "sweep/sweep.h"
#include "sweep/sweep_results.h"

namespace tqlab::sweep_test {

struct DumpShape {
  int layers = 2;
  int seqs = 2;
  int kv_heads = 2;
  int q_heads = 4;
  int tokens = 37;
  int key_dim = 16;
  int value_dim = 8;
};

/// Writes a float32 safetensors dump (layout "seq head token dim", names layers.{l}.q/k/v)
/// of Gaussian keys with a per-channel offset, values, and queries scaled for peaked attention.
void write_dump(const std::string& path, const DumpShape& shape, std::uint64_t seed = 7);

/// Plans and runs a sweep of `config` (as if read from `config_path`) on `threads` threads.
struct SweepRun {
  SweepPlan plan;
  SweepResults results;
};
SweepRun run_config(const nlohmann::json& config, const std::string& config_path, int threads = 1);

/// The results document without its "timing" section, as text.
std::string results_text(const SweepRun& run);

}  // namespace tqlab::sweep_test
