// Content identity of input files, through OpenSSL's libcrypto (not a
// hand-written hash).
#pragma once

#include <string>
#include <string_view>

namespace tqlab {

/// SHA-256 of the file's bytes as 64 lowercase hex digits. Reads with read(2)
/// in 1 MiB pieces (page cache, not this process's resident memory).
/// InputError naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

/// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace tqlab
