// llama.cpp's logits of one prompt at chosen positions, for q8_0_precision.sh: the prompt (token
// ids, whitespace separated) in one llama_decode, then each position's row as float32 rows.
//
//   llama_logits MODEL.gguf IDS_FILE OUT_FILE POSITION...
//
// Built by that script against a llama.cpp build (its include/ and libllama); not part of the
// project's build.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: llama_logits MODEL.gguf IDS_FILE OUT_FILE POSITION...\n");
    return 2;
  }
  std::ifstream in(argv[2]);
  std::vector<llama_token> ids;
  for (long v; in >> v;) ids.push_back(llama_token(v));
  if (ids.empty() || ids.size() > 4096) {
    std::fprintf(stderr, "llama_logits: %s: expected 1 to 4096 token ids\n", argv[2]);
    return 1;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) {
    std::fprintf(stderr, "llama_logits: %s: llama.cpp cannot load it\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = uint32_t(ids.size());
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  llama_batch batch = llama_batch_init(int32_t(ids.size()), 0, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = llama_pos(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = int32_t(ids.size());
  if (ctx == nullptr || llama_decode(ctx, batch) != 0) {
    std::fprintf(stderr, "llama_logits: llama_decode failed\n");
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr) {
    std::perror(argv[3]);
    return 1;
  }
  for (int a = 4; a < argc; ++a) {
    const int pos = std::atoi(argv[a]);
    if (pos < 0 || size_t(pos) >= ids.size()) {
      std::fprintf(stderr, "llama_logits: position %s is outside the prompt\n", argv[a]);
      return 1;
    }
    std::fwrite(llama_get_logits_ith(ctx, pos), sizeof(float), size_t(n_vocab), out);
  }
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
