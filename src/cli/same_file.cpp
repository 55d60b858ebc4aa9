// same_file for every command that writes a file next to what it reads (see commands.h).
#include <filesystem>
#include <string>
#include <system_error>

#include "cli/commands.h"

namespace tqlab::cli {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  return std::filesystem::weakly_canonical(a, error) == std::filesystem::weakly_canonical(b, error);
}

}  // namespace tqlab::cli
