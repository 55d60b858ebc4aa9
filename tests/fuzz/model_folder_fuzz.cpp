// libFuzzer target. A model folder as `tqlab ppl --model`, `dump`, a sweep's model block and
// `allocate` open it (model/checkpoint.h): config.json read and range-checked (model/model_config.h),
// then model.safetensors' header read and every tensor the config asks for checked for name,
// shape and dtype. Nothing is computed: the weights are not read.
// Input: config.json's text, a NUL byte, then the model.safetensors file (a header is enough).
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/log.h"
#include "fuzz_support.h"
#include "model/checkpoint.h"
#include "model/model_config.h"

namespace {

std::string folder;

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char name[] = "/tmp/tqlab-fuzz-model-XXXXXX";
  if (::mkdtemp(name) == nullptr) std::abort();
  folder = name;
  tqlab::log::set_level(tqlab::log::Level::error);  // the tied-embeddings warning, once per input, is noise here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = input.find('\0');
  if (cut == std::string_view::npos) return 0;
  write_file(folder + "/config.json", input.substr(0, cut));
  write_file(folder + "/model.safetensors", input.substr(cut + 1));
  fuzz::expect_success_or_input_error([&] {
    const std::unique_ptr<Checkpoint> checkpoint = Checkpoint::open(folder);
    const ModelConfig& config = checkpoint->config();
    // What the forward divides by: every one must be a positive count (a zero was SIGFPE).
    if (config.q_heads <= 0 || config.kv_heads <= 0 || config.head_dim <= 0 || config.layers <= 0 ||
        config.vocab_size <= 0 || config.hidden_size <= 0 || config.intermediate_size <= 0 ||
        config.q_heads % config.kv_heads != 0) {
      fuzz::finding("a config the forward cannot run was accepted", config.path);
    }
    (void)config.group();
    check_context(config, 1, "--ctx");
  });
  return 0;
}
