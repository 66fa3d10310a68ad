// Reference harness (outside the k3cpp repo): llama.cpp mtmd embeddings of an image.
// usage: mtmd_embed TEXT.gguf MMPROJ.gguf IMAGE OUT.f32 [flash:0|1]
#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int argc, char** argv) {
  if (argc < 5) { fprintf(stderr, "usage\n"); return 2; }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* m = llama_model_load_from_file(argv[1], mp);
  if (!m) return 3;
  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false; cp.n_threads = 2; cp.warmup = false; cp.print_timings = false;
  cp.flash_attn_type = (argc > 5 && atoi(argv[5])) ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], m, cp);
  if (!ctx) return 4;
  mtmd_bitmap* bmp = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false).bitmap;
  if (!bmp) return 5;
  mtmd_input_text txt = {mtmd_get_marker(ctx), strlen(mtmd_get_marker(ctx)), false, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bl[1] = {bmp};
  if (mtmd_tokenize(ctx, chunks, &txt, bl, 1) != 0) return 6;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_IMAGE) continue;
    if (mtmd_encode_chunk(ctx, c) != 0) return 7;
    size_t nt = mtmd_input_chunk_get_n_tokens(c);
    const mtmd_image_tokens* it = mtmd_input_chunk_get_tokens_image(c);
    int ne = llama_model_n_embd_inp(m);
    float* e = mtmd_get_output_embd(ctx);
    FILE* f = fopen(argv[4], "wb");
    fwrite(e, sizeof(float), nt * ne, f);
    fclose(f);
    printf("tokens %zu nx %zu ny %zu n_embd %d\n", nt, mtmd_image_tokens_get_nx(it), mtmd_image_tokens_get_ny(it), ne);
  }
  return 0;
}
