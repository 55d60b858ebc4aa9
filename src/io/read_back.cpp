#include "io/read_back.h"

#include <cmath>
#include <map>

#include "core/text.h"

namespace tqlab {

double check_read_back_number(const JsonReader& reader, double value, Sign sign, std::string_view where) {
  if (!std::isfinite(value) || std::fabs(value) > kReadBackLimit) {
    reader.fail("{}{} is not a number tqlab writes (finite, at most {:g} in magnitude)", where, value,
                kReadBackLimit);
  }
  if (sign == Sign::non_negative && value < 0) reader.fail("{}{} is negative; expected at least 0", where, value);
  if (sign == Sign::positive && !(value > 0)) reader.fail("{}{} is not positive", where, value);
  return value;
}

double read_back_number(const JsonReader& reader, Sign sign) {
  if (!reader.is_number()) reader.fail("expected a number, got {}", reader.type_name());
  return check_read_back_number(reader, reader.as_number(), sign, "");
}

void check_each_once(const JsonReader& list, const std::vector<std::string>& found,
                     const std::vector<std::string>& expected, std::string_view what) {
  if (found == expected) return;
  std::map<std::string, std::size_t> wanted, seen;
  for (std::size_t i = 0; i < expected.size(); ++i) wanted.emplace(expected[i], i);
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::string& name = found[i];
    if (!wanted.count(name)) {
      list.fail("entry {}: {} '{}' is not one of the {} expected here", i, what, printable(name), expected.size());
    }
    if (const auto [at, fresh] = seen.emplace(name, i); !fresh) {
      list.fail("{} '{}' appears twice (entries {} and {}); each must appear once", what, printable(name), at->second,
                i);
    }
  }
  for (const std::string& name : expected) {
    if (!seen.count(name)) {
      list.fail("{} '{}' is missing ({} of {} expected are present)", what, printable(name), found.size(),
                expected.size());
    }
  }
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (found[i] != expected[i]) {
      list.fail("entry {} is {} '{}', expected '{}' (the order tqlab writes)", i, what, printable(found[i]),
                printable(expected[i]));
    }
  }
}

}  // namespace tqlab
