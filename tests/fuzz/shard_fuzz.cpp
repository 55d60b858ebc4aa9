// libFuzzer target. A shard document read back, as `tqlab merge` reads it before joining: a sweep
// shard (tqlab.shard/1, sweep/shard_document.h: header, holds, every unit's totals and KL tails)
// or an allocation profile shard (tqlab.profile-shard/1, allocate/profile_shard.h: header, work
// units and costs, the partial profile), each under io/read_back.h's rule.
// Input: the document's text (written to a file: both readers take a path).
#include <cstdlib>
#include <fstream>
#include <string>

#include "allocate/profile_shard.h"
#include "fuzz_support.h"
#include "job/shard_document.h"

namespace {

std::string path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char name[] = "/tmp/tqlab-fuzz-shard-XXXXXX";
  if (::mkdtemp(name) == nullptr) std::abort();
  path = std::string(name) + "/shard.json";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
  if (is_profile_shard_file(path)) {
    fuzz::expect_success_or_input_error([&] {
      const ProfileShard shard = read_profile_shard(path);
      (void)describe_unit_ranges(shard.held);
    });
  } else {
    fuzz::expect_success_or_input_error([&] {
      const ShardDocument shard = read_shard_document(path);
      (void)describe_unit_ranges(shard.held);
    });
  }
  return 0;
}
