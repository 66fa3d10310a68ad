// fuzz/fuzz_gguf: libFuzzer target for the GGUF reader. Any input must either parse or throw
// k3::Error; anything else (a crash, a sanitizer report, another exception type escaping) is
// a bug. A parsed file is also put through the census and value rendering, and every tensor's
// first and last byte is touched so that a wrong bounds check shows up under ASan.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "gguf/census.h"
#include "gguf/file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = k3::gguf::GgufFile::open_memory(data, size, "fuzz.gguf");
    size_t sink = 0;
    for (const auto& kv : f->kvs()) sink += kv.second.to_display().size();
    for (const auto& t : f->tensors())
      if (t.nbytes) sink += t.data[0] + t.data[t.nbytes - 1];
    k3::gguf::Census c = k3::gguf::take_census(*f);
    sink += k3::gguf::census_json(c, -1).size();
    if (sink == 1) return 0;  // keep the work observable
  } catch (const k3::Error&) {}
  return 0;
}
