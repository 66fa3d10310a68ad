// cli/cmd_embed_image: `k3 embed-image --mmproj F --image IMG -o OUT.f32` — the vision tower's
// output for one image as raw little-endian float32 (n_image_tokens × n_embd, row-major, no
// header): the machine interface the tower is checked through against the reference
// (docs/vision.md), like eval-logits is for the text model.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>

#include "cli/commands.h"
#include "cli/image_input.h"
#include "cli/parse_args.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "vision/encode.h"

namespace k3::cli {

int cmd_embed_image(int argc, char** argv) {
  CLI::App app{
      "Run one image through a Kimi-K3 vision tower (mmproj GGUF) and write its embeddings as raw float32\n"
      "(n_image_tokens × n_embd, row-major, no header; docs/vision.md)",
      "k3 embed-image"};
  std::string mmproj, image_path, out_path;
  int threads = 0;
  app.add_option("--mmproj", mmproj, "the vision tower: a kimik3 mmproj GGUF (F32, F16, BF16 or Q8_0)")
      ->required();
  app.add_option("--image", image_path, "image file: PNG, JPEG, WebP or GIF (first frame)")->required();
  app.add_option("-o,--output", out_path,
                 "output file (raw float32), or - for no file (print the shape only)")
      ->required();
  app.add_option("-t,--threads", threads, "worker threads (default: machine default)");
  app.footer(
      "The image is resized as the reference does (aspect kept, sides multiples of patch × merge, within "
      "the\n"
      "file's image_min/max_pixels); the shape line on stderr gives the patch grid and the token count.\n"
      "Example: k3 embed-image --mmproj mmproj-F16.gguf --image cat.png -o cat.f32");
  if (auto rc = parse_args(app, argc, argv)) return *rc;

  auto tower = open_tower(mmproj, 0);
  const vision::RgbImage img = load_image(image_path);
  ThreadPool pool(threads > 0 ? threads : ThreadPool::default_threads());
  const auto t0 = std::chrono::steady_clock::now();
  const vision::ImageEmbedding e = vision::embed_image(*tower, img.view(), &pool);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out_path != "-") {
    AtomicFile out(out_path);
    out.write(e.data.data(), e.data.size() * sizeof(float));
    out.commit();
  }
  const uint32_t p = tower->hp().patch;
  fmt::print(stderr,
             "embed-image: {}×{} → {}×{} pixels, {}×{} patches, {} token{} ({}×{}) × {} floats, {:.3f} s{}\n",
             img.width, img.height, e.input_w, e.input_h, e.input_w / p, e.input_h / p, e.n_tokens,
             e.n_tokens == 1 ? "" : "s", e.grid_w, e.grid_h, e.n_embd, secs,
             out_path == "-" ? "" : " → " + out_path);
  return 0;
}

}  // namespace k3::cli
