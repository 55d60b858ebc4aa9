// libFuzzer target. A sweep journal resumed (sweep/sweep_journal.h): a valid header line, then one
// record the fuzzer writes, wrapped in a valid envelope and checksum so that the record itself is
// parsed (a record of finished unit totals, sweep/totals_json.h, or the data's sha256), as
// `tqlab sweep --resume` reads it.
// Input: one record's JSON text.
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_support.h"
#include "job/sweep_journal.h"

namespace {

std::string path;
std::string header;
const tqlab::JournalIdentity identity{std::string(64, 'a'), "'fuzz.safetensors'", 4096, 8};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char name[] = "/tmp/tqlab-fuzz-journal-XXXXXX";
  if (::mkdtemp(name) == nullptr) std::abort();
  path = std::string(name) + "/out.json.journal";
  {
    tqlab::JournalContents found;
    tqlab::SweepJournal journal(path, identity, false, found);  // writes the header
  }
  std::ifstream in(path, std::ios::binary);
  header.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (header.empty()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tqlab;
  const std::string_view record(reinterpret_cast<const char*>(data), size);
  if (record.find('\n') != std::string_view::npos) return 0;  // one line
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << header << journal_line(record);
    if (!out) std::abort();
  }
  fuzz::expect_success_or_input_error([&] {
    JournalContents found;
    SweepJournal journal(path, identity, true, found);
    for (const UnitTotals& unit : found.units) {
      if (unit.unit < 0 || unit.unit >= identity.units) fuzz::finding("a journal unit outside the sweep", "");
    }
  });
  return 0;
}
