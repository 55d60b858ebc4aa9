// Token ids for the end-to-end commands, from a file: a 1-D integer .npy
// (u8, u16, i32, i64, or any other integer type), or FILE.safetensors:NAME
// for an integer tensor of a safetensors file (a dump's input_ids
// [sequences, tokens], read in C order, the sequences one after the other).
// Chunks are consecutive slices of the ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tqlab {

struct TokenIds {
  std::string path;    ///< the file
  std::string tensor;  ///< the tensor read ("" for .npy)
  std::string dtype;   ///< its element type ("i32")
  std::vector<std::int32_t> ids;
};

/// A token spec cut into its file and tensor name: "FILE.safetensors:NAME" is
/// {FILE.safetensors, NAME} unless a file has the whole name; else {spec, ""}.
struct TokenFileSpec {
  std::string path, tensor;
};
TokenFileSpec split_token_spec(const std::string& spec);

/// Reads `spec` ("FILE.npy", "FILE.safetensors:NAME"; a safetensors file of
/// one tensor needs no NAME). InputError, naming the file and saying what was
/// found, for a float or bool tensor, a .npy that is not 1-D, no tensor NAME,
/// no ids at all, and an id outside [0, vocab_size) (giving the first such id,
/// where it is and how many ids there are). `option` names the option ("--tokens").
TokenIds read_token_ids(const std::string& spec, int vocab_size, const char* option);

}  // namespace tqlab
