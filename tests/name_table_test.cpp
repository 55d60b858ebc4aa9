// The enum <-> name table (core/name_table.h): names and parses agree row by row, unknown words and
// values are reported as such, and the rows' order is the listing order. (A repeated value or name
// does not compile: the constructor throws in a constant expression.)
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/kernel_set.h"
#include "core/name_table.h"

namespace tqlab {
namespace {

enum class Colour { red, green, blue, unnamed };

inline constexpr auto kColourNames =
    make_name_table<Colour>({{Colour::green, "green"}, {Colour::red, "red"}, {Colour::blue, "blue-ish"}});

static_assert(kColourNames.name(Colour::blue) == "blue-ish");
static_assert(*kColourNames.parse("red") == Colour::red);

TEST(NameTableTest, EveryRowNamesAndParsesBack) {
  for (const EnumName<Colour>& row : kColourNames.rows()) {
    EXPECT_EQ(kColourNames.name(row.value), row.name);
    EXPECT_EQ(kColourNames.parse(row.name), row.value);
  }
}

TEST(NameTableTest, UnknownWordsAndValuesAreReported) {
  EXPECT_FALSE(kColourNames.parse("Red"));
  EXPECT_FALSE(kColourNames.parse("blue"));
  EXPECT_FALSE(kColourNames.parse(""));
  EXPECT_EQ(kColourNames.name(Colour::unnamed), "?");
}

TEST(NameTableTest, ListsInRowOrder) {
  EXPECT_EQ(kColourNames.names(), (std::vector<std::string>{"green", "red", "blue-ish"}));
  const auto values = kColourNames.values();
  EXPECT_EQ(std::vector<Colour>(values.begin(), values.end()),
            (std::vector<Colour>{Colour::green, Colour::red, Colour::blue}));
}

// A table in use: the kernel forms' names are the words TQLAB_KERNELS accepts, and parse back.
TEST(NameTableTest, KernelSetNamesParseBack) {
  for (KernelSet set : {KernelSet::portable, KernelSet::avx2, KernelSet::avx512}) {
    EXPECT_EQ(parse_kernel_set(kernel_set_name(set)), set);
  }
  EXPECT_EQ(kernel_set_name(KernelSet::avx2), "avx2");
  EXPECT_FALSE(parse_kernel_set("sse2"));
}

}  // namespace
}  // namespace tqlab
