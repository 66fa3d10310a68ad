// tools/safetensors: a validated, memory-mapped reader for Hugging Face safetensors
// checkpoints (one file, or a directory with model.safetensors.index.json).
// Contract: open() checks the 8-byte header length, the JSON header, every dtype, shape and
// data_offsets pair against the file size (no overflow, no overlap past the end, byte count =
// elements × dtype size) and throws k3::Error naming the file and the tensor at fault. An
// opened set hands out pointers into the mappings, valid for the object's lifetime. Names
// must be unique across the files of a set; every name of the index must exist in the file
// the index names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {
class MappedFile;
}

namespace k3::tools {

enum class StDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };
const char* st_dtype_name(StDtype t);
size_t st_dtype_size(StDtype t);

struct StTensor {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<int64_t> shape;  // row-major (PyTorch order): shape.back() is contiguous
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  std::string file;  // the file that holds it (for error messages)
  int64_t numel() const;
  std::string shape_string() const;  // "[96, 7168]"
};

class SafetensorsSet {
 public:
  // A directory (index file, else model.safetensors, else every *.safetensors in name
  // order) or one .safetensors file.
  static std::unique_ptr<SafetensorsSet> open(const std::string& path);
  ~SafetensorsSet();

  const StTensor* find(std::string_view name) const;
  const StTensor& get(std::string_view name) const;  // throws "missing tensor NAME"
  const std::map<std::string, StTensor, std::less<>>& tensors() const { return tensors_; }
  const std::vector<std::string>& files() const { return files_; }
  uint64_t total_bytes() const;

 private:
  SafetensorsSet() = default;
  void add_file(const std::string& path);
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::vector<std::string> files_;
  std::map<std::string, StTensor, std::less<>> tensors_;
};

// Parses one file's header from memory (exposed for tests); `name` stands for the file.
std::vector<StTensor> parse_safetensors(const uint8_t* data, size_t size, const std::string& name);

}  // namespace k3::tools
