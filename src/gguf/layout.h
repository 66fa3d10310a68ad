// gguf/layout: the arithmetic shared by the reader and the writer: aligned sizes and the byte
// size of a tensor from its type and shape, all overflow-checked.
// Contract: functions return false / an error text instead of throwing, so each caller can
// report the failure with its own context (file, field, byte offset).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::gguf {

constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxNameBytes = 63;  // ggml keeps names in 64 bytes including the NUL

// *out = x rounded up to a multiple of a (a > 0); false on overflow.
bool align_up(uint64_t x, uint64_t a, uint64_t* out);

// Byte size of a tensor of type id `type_id` and extents `ne` (as stored, 0..4 entries).
// Returns "" and sets *nbytes, or a description of what is wrong (unknown type, activation-only
// type, negative extent, ne[0] not a multiple of the block size, overflow).
std::string tensor_nbytes(uint32_t type_id, const std::vector<int64_t>& ne, uint64_t* nbytes);

// Whether a general.alignment value is acceptable (non-zero power of two).
inline bool valid_alignment(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

// Splits "dir/name-00002-of-00008.gguf" into prefix "dir/name", 1-based number 2 and count 8.
// False if the path does not end in that exact pattern (five digits each).
bool parse_shard_name(const std::string& path, std::string* prefix, uint32_t* number, uint32_t* count);

}  // namespace k3::gguf
