// core/decimal.h: the one reader of integers written as text. Decimal whatever the text looks
// like (no octal, no base prefixes), every value beyond the range refused (never clamped).
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "core/decimal.h"
#include "core/error.h"

namespace tqlab {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(Decimal, LeadingZerosAreDecimalNotOctal) {
  EXPECT_EQ(decimal_integer("0100", 0, 1000), 100);
  EXPECT_EQ(decimal_integer("010", 0, 1000), 10);
  EXPECT_EQ(decimal_integer("08", 0, 1000), 8);
  EXPECT_EQ(decimal_integer("-007", -10, 10), -7);
  EXPECT_EQ(decimal_unsigned("010"), 10u);
}

TEST(Decimal, RefusesWhatIsNotDigits) {
  for (const char* text : {"", "-", "+5", " 5", "5 ", "0x10", "1e3", "1.0", "--5", "5-", "٣"}) {
    EXPECT_FALSE(decimal_integer(text, kMin, kMax)) << text;
    EXPECT_FALSE(decimal_unsigned(text)) << text;
  }
  EXPECT_FALSE(decimal_unsigned("-1"));
}

TEST(Decimal, RangeIsCheckedNeverClamped) {
  EXPECT_EQ(decimal_integer("9223372036854775807", kMin, kMax), kMax);
  EXPECT_EQ(decimal_integer("-9223372036854775808", kMin, kMax), kMin);
  EXPECT_FALSE(decimal_integer("9223372036854775808", kMin, kMax));
  EXPECT_FALSE(decimal_integer("-9223372036854775809", kMin, kMax));
  EXPECT_EQ(decimal_unsigned("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(decimal_unsigned("18446744073709551616"));
  EXPECT_FALSE(decimal_unsigned("99999999999999999999999"));
  EXPECT_FALSE(decimal_integer("2147483648", 0, 2147483647));
  EXPECT_FALSE(decimal_integer("-1", 0, 10));
  EXPECT_EQ(decimal_integer("10", 0, 10), 10);
}

TEST(Decimal, ErrorsNameTheOptionAndTheRange) {
  try {
    read_decimal("99999999999", "--ctx", 0, 2147483647);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "--ctx: 99999999999 is out of range (expected 0..2147483647)");
  }
  EXPECT_NE(decimal_problem("0x10", 0, 10).find("not a decimal integer"), std::string::npos);
  EXPECT_EQ(decimal_problem("7", 0, 10), "");
}

}  // namespace
}  // namespace tqlab
