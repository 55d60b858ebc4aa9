// libFuzzer target. A .safetensors file (io/safetensors.h): header length, JSON header,
// offsets, data. Input: the whole file. Accepted files are read in full (tensor_file_check.h).
#include <memory>

#include "core/mapped_file.h"
#include "fuzz_support.h"
#include "io/safetensors.h"
#include "tensor_file_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  auto mapping = std::make_shared<const MappedFile>("fuzz.safetensors", fuzz::to_bytes(data, size));
  fuzz::expect_success_or_input_error([&] {
    const std::unique_ptr<TensorFile> file = open_safetensors(mapping);
    fuzz::touch_every_tensor(*file);
  });
  return 0;
}
