// Lloyd–Max codebooks written for other runtimes (`tqlab codebook export`).
//
// Every format carries, per codebook (dim d, bits b, distribution): the 2^b
// centroids, ascending, for one coordinate of a randomly rotated unit vector
// in R^d, in the coordinate's own units (multiply by the vector's norm); the
// 2^b − 1 interior boundaries (boundaries[i] separates centroids i and i + 1);
// mse_per_coord = E[(t − Q(t))²] under the distribution the codebook was
// designed for; d_mse = d · mse_per_coord. Numbers are written so that they
// read back as the same doubles (shortest round-trip form, or raw f64).
//
//  json  schema tqlab.codebook/1: one codebook is one object {schema, dim, bits,
//        distribution, levels, centroids, boundaries, mse_per_coord, d_mse,
//        marginal_mse_per_coord, alpha, tqlab_version}; several are
//        {schema, codebooks: [such objects]}.
//  csv   header dim,bits,distribution,index,centroid,upper_boundary,mse_per_coord,d_mse
//        and one row per level (upper_boundary empty on the last level).
//  npy   exactly one codebook: its centroids, f64, shape [2^b].
//  npz   every codebook as members {dist}_d{dim}_b{bits}_centroids / _boundaries, f64.
//  hpp   a self-contained C++17 header: constexpr double arrays and a
//        `Codebook` struct per codebook in namespace tqlab_codebook, plus `kAll`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tqlab {

struct Codebook;

enum class CodebookFormat { json, csv, npy, npz, hpp };

/// "json", "csv", "npy", "npz", "hpp".
std::string_view codebook_format_name(CodebookFormat format);

/// Inverse of codebook_format_name; nullopt for any other word.
std::optional<CodebookFormat> parse_codebook_format(std::string_view name);

/// The format a file name's extension names (.json .csv .npy .npz .hpp .h); nullopt otherwise.
std::optional<CodebookFormat> codebook_format_for_path(std::string_view path);

/// One codebook as a tqlab.codebook/1 object.
nlohmann::json codebook_json(const Codebook& codebook);

/// The text of the json, csv or hpp form of `codebooks` (at least one). For hpp,
/// `provenance` (e.g. the command line) goes into the header's opening comment.
std::string codebook_text(CodebookFormat format, const std::vector<const Codebook*>& codebooks,
                          std::string_view provenance = {});

/// Writes `codebooks` to `path` atomically, or to stdout when path is "-" or
/// empty (text formats only). InputError naming the path when npy/npz go to
/// stdout, when npy gets several codebooks, or when an npy/npz path does not
/// end in its extension.
void write_codebooks(const std::string& path, CodebookFormat format, const std::vector<const Codebook*>& codebooks,
                     std::string_view provenance = {});

}  // namespace tqlab
