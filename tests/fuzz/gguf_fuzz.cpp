// libFuzzer target. A GGUF file (io/gguf.h): header, typed metadata, tensor infos, data.
// Input: the whole file. An accepted file is read in full: every metadata value described,
// every tensor's bytes summed, so a value or tensor pointing outside the input is a
// sanitizer report.
#include <memory>

#include "core/mapped_file.h"
#include "fuzz_support.h"
#include "io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  auto mapping = std::make_shared<const MappedFile>("fuzz.gguf", fuzz::to_bytes(data, size));
  fuzz::expect_success_or_input_error([&] {
    const std::unique_ptr<GgufFile> file = GgufFile::open(mapping);
    for (const GgufMetadata& entry : file->metadata()) {
      (void)describe_gguf_value(entry.value, 1u << 20);
      if (file->find(entry.key) != &entry.value) throw InternalError("gguf: a key is listed twice");
    }
    unsigned sum = 0;
    for (const GgufTensor& tensor : file->tensors()) {
      if (file->find_tensor(tensor.name) != &tensor) throw InternalError("gguf: a tensor is listed twice");
      const std::int64_t rows = tensor.ne[0] == 0 ? 0 : tensor.element_count / tensor.ne[0];
      if (tensor.row_bytes() * static_cast<std::uint64_t>(rows) != tensor.byte_size) {
        throw InternalError("gguf: byte_size does not match the rows");
      }
      for (std::uint64_t i = 0; i < tensor.byte_size; ++i) sum += std::to_integer<unsigned>(tensor.data[i]);
      (void)tensor.shape_string();
    }
    (void)sum;
  });
  return 0;
}
