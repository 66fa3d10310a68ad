// core/read_file: a whole file's bytes in one string (the one reader for prompts, schemas,
// token lists, configs and tokenizer files).
// Contract: read_file(path, max_bytes) returns the bytes of `path` unchanged (binary). It
// throws k3::Error naming the path when the file cannot be opened or read ("<path>: cannot
// open (No such file or directory)", "<path>: is a directory, not a file") and, when the file
// holds more than max_bytes, one naming the limit ("<path>: larger than the limit of 16 MiB
// (20971521 bytes)"): from its size before reading for a regular file, else as soon as the
// limit is passed (a pipe). `what` (a flag or a tool) leads every message when given
// ("--haystack: <path>: cannot open (...)").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace k3 {

inline constexpr uint64_t kNoReadLimit = std::numeric_limits<uint64_t>::max();

std::string read_file(const std::string& path, uint64_t max_bytes = kNoReadLimit, std::string_view what = {});

}  // namespace k3
