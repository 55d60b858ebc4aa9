#include "model/weight_source.h"

#include <sys/stat.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "io/gguf.h"
#include "model/checkpoint.h"
#include "model/gguf_model.h"

namespace tqlab {

std::uint64_t WeightSource::weight_bytes() const {
  std::uint64_t total = 0;
  for (const SourceFile& file : files()) total += file.bytes;
  return total;
}

std::unique_ptr<WeightSource> open_weight_source(const std::string& path) {
  struct stat info {};
  // A regular file can only be a GGUF; anything else goes to the folder reader, whose messages say
  // what a checkpoint folder needs.
  if (::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    std::byte magic[4] = {};
    const MappedFile file(path);
    if (file.size() >= sizeof magic) file.read(0, magic);
    if (!looks_like_gguf(magic, sizeof magic)) {
      fail("model '{}': a file, but not a GGUF; a model is a Hugging Face checkpoint folder or a .gguf file", path);
    }
    return GgufModel::open(path);
  }
  return Checkpoint::open(path);
}

}  // namespace tqlab
