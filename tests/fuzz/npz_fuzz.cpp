// libFuzzer target. An .npz archive (io/npz.h): end records (zip64 too), central directory, local headers, stored and
// deflated members, each a .npy stream. Both raw16_as_bf16 settings. Input: the whole file. Accepted files are read in
// full (tensor_file_check.h).
#include <memory>

#include "core/mapped_file.h"
#include "fuzz_support.h"
#include "io/npz.h"
#include "tensor_file_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  auto mapping = std::make_shared<const MappedFile>("fuzz.npz", fuzz::to_bytes(data, size));
  for (const bool raw16_as_bf16 : {false, true}) {
    OpenOptions options;
    options.raw16_as_bf16 = raw16_as_bf16;
    fuzz::expect_success_or_input_error([&] {
      const std::unique_ptr<TensorFile> file = open_npz(mapping, options);
      fuzz::touch_every_tensor(*file);
    });
  }
  return 0;
}
