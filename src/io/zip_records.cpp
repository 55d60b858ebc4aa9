#include "io/zip_records.h"

#include <zlib.h>

namespace tqlab::zip {

std::uint32_t crc32_of(std::uint32_t crc, std::span<const std::byte> bytes) {
  if (bytes.empty()) return crc;  // zlib's crc32 of a null buffer is the initial value, not `crc`
  // crc32_z counts in size_t: pieces above 4 GiB go through whole.
  return static_cast<std::uint32_t>(
      ::crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<z_size_t>(bytes.size())));
}

}  // namespace tqlab::zip
