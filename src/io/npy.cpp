#include "io/npy.h"

#include "core/error.h"
#include "core/mapped_file.h"

namespace tqlab {

std::unique_ptr<TensorFile> open_npy(std::shared_ptr<const MappedFile> mapping, const OpenOptions&) {
  fail("'{}': .npy reading is not implemented yet", mapping->path());
}

TensorView parse_npy(std::span<const std::byte>, std::string name, std::string_view where, const OpenOptions&) {
  fail("'{}': tensor '{}': .npy reading is not implemented yet", where, name);
}

std::vector<std::byte> encode_npy(const TensorToWrite& tensor) {
  fail("tensor '{}': .npy writing is not implemented yet", tensor.name);
}

void write_npy(const std::string& path, const TensorToWrite&) {
  fail("'{}': .npy writing is not implemented yet", path);
}

}  // namespace tqlab
