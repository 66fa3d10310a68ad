// cli/cmd_dequant: `k3 dequant MODEL --tensor NAME -o OUT.f32` — one tensor as raw
// little-endian float32 in GGUF element order (ne[0] fastest), no header. A stable machine
// interface (docs/dequant.md). Decoding is quant::dequantize_row, row by row, streamed to an
// atomic output file so memory stays bounded for any tensor size.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gguf/file.h"
#include "quant/codec.h"

namespace k3::cli {

namespace {

void write_stdout(const float* p, size_t n) {
  const char* b = reinterpret_cast<const char*>(p);
  size_t left = n * sizeof(float);
  while (left) {
    ssize_t w = ::write(STDOUT_FILENO, b, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("writing to standard output failed: {}", std::strerror(errno));
    }
    b += w;
    left -= static_cast<size_t>(w);
  }
}

[[noreturn]] void no_such_tensor(const gguf::GgufFile& f, const std::string& name) {
  std::string hints;
  int n = 0;
  for (const gguf::TensorInfo& t : f.tensors())
    if (t.name.find(name) != std::string::npos && n++ < 5) hints += (hints.empty() ? " " : ", ") + t.name;
  fail("{}: no tensor named '{}'{}", f.path(), name,
       hints.empty() ? " (k3 info --tensors lists them)" : " (similar:" + hints + ")");
}

}  // namespace

int cmd_dequant(int argc, char** argv) {
  CLI::App app{"Write one tensor as raw little-endian float32 (GGUF element order, no header)", "k3 dequant"};
  std::string model, model_opt, name, out_path;
  app.add_option("model", model, "GGUF file (the first shard of a split set)");
  app.add_option("-m,--model", model_opt, "same as the positional MODEL");
  app.add_option("-t,--tensor", name, "tensor name, e.g. blk.0.attn_q.weight")->required();
  app.add_option("-o,--output", out_path, "output file, or - for standard output")->required();
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (model.empty()) model = model_opt;
  if (model.empty()) { return usage_error("give a model file (k3 dequant MODEL --tensor NAME -o OUT)"); }

  auto f = gguf::GgufFile::open(model);
  const gguf::TensorInfo* t = f->tensor(name);
  if (!t) no_such_tensor(*f, name);
  if (!quant::can_dequantize(t->type))
    fail("{}: tensor '{}': type {} cannot be dequantized", f->path(), name, quant::type_name(t->type));

  const int64_t ne0 = t->dim(0);
  const int64_t n = t->n_elements();
  const int64_t rows = ne0 > 0 ? n / ne0 : 0;
  const size_t row_bytes = ne0 > 0 ? quant::row_bytes(t->type, ne0) : 0;
  // About 4 MiB of floats per chunk, at least one row.
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(ne0, 1));
  std::vector<float> buf(static_cast<size_t>(std::min(rows, chunk_rows) * std::max<int64_t>(ne0, 0)));

  std::unique_ptr<AtomicFile> out;
  if (out_path != "-") out = std::make_unique<AtomicFile>(out_path);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    int64_t nr = std::min(chunk_rows, rows - r0);
    for (int64_t r = 0; r < nr; ++r)
      quant::dequantize_row(t->type, t->data + static_cast<size_t>(r0 + r) * row_bytes,
                            buf.data() + static_cast<size_t>(r * ne0), ne0);
    size_t count = static_cast<size_t>(nr * ne0);
    if (out) out->write(buf.data(), count * sizeof(float));
    else write_stdout(buf.data(), count);
  }
  if (out) out->commit();
  return 0;
}

}  // namespace k3::cli
