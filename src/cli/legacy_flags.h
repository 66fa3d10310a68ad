// cli/legacy_flags: llama.cpp spells some flags as multi-letter single-dash names ("-ub",
// "-np"); CLI11 allows only one-letter short names, so such arguments are rewritten to their
// long forms before parsing.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace k3::cli {

// Owns the rewritten argument strings; argv() points into them.
class LegacyFlags {
 public:
  LegacyFlags(int argc, char** argv, std::vector<std::pair<std::string, std::string>> map)
      : args_(argv, argv + argc) {
    for (auto& a : args_)
      for (const auto& [from, to] : map)
        if (a == from) a = to;
    for (auto& a : args_) ptrs_.push_back(a.data());
  }
  int argc() const { return static_cast<int>(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;
};

}  // namespace k3::cli
