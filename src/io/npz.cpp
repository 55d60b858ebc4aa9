#include "io/npz.h"

#include "core/error.h"
#include "core/mapped_file.h"

namespace tqlab {

std::unique_ptr<TensorFile> open_npz(std::shared_ptr<const MappedFile> mapping, const OpenOptions&) {
  fail("'{}': .npz reading is not implemented yet", mapping->path());
}

void write_npz(const std::string& path, std::span<const TensorToWrite>, bool) {
  fail("'{}': .npz writing is not implemented yet", path);
}

}  // namespace tqlab
