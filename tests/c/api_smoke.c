/* Drives the public API from C99: load -> tokenize -> process -> sample -> release, and the
 * documented failure paths. argv[1]: an HF model directory, argv[2]: tokenizer.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "gptoss.h"

int main(int argc, char** argv) {
  struct gptoss_model_options options;
  gptoss_model_t model = NULL;
  gptoss_tokenizer_t tokenizer = NULL;
  gptoss_context_t context = NULL;
  gptoss_sampler_t sampler = NULL;
  struct gptoss_sampler_options sopt;
  uint32_t tokens[64];
  size_t n_tokens = 0, vocab = 0, n = 0, i;
  float* logits;
  uint32_t first = 0, again = 0;
  const char* prompt = "The quick brown fox";

  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_DIR TOKENIZER_JSON\n", argv[0]);
    return 2;
  }

  /* Failure paths: clear statuses, out-parameters untouched, messages set. */
  EXPECT(gptoss_model_create_from_file(NULL, &model) == gptoss_status_invalid_argument);
  EXPECT(model == NULL);
  EXPECT(strlen(gptoss_get_last_error_message()) > 0);
  EXPECT(gptoss_model_create_from_file("/nonexistent/model", &model) == gptoss_status_io);
  EXPECT(model == NULL);
  EXPECT(gptoss_model_release(NULL) == gptoss_status_success);
  EXPECT(strcmp(gptoss_status_to_string(gptoss_status_context_overflow), "context_overflow") == 0);
  EXPECT(gptoss_get_version() != NULL);

  EXPECT(gptoss_model_options_init(&options) == gptoss_status_success);
  options.backend = "cpu";
  options.tokenizer_path = argv[2];
  if (gptoss_model_create_with_options(argv[1], &options, &model) != gptoss_status_success) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], gptoss_get_last_error_message());
    return 1;
  }
  EXPECT(gptoss_model_get_tokenizer(model, &tokenizer) == gptoss_status_success);
  EXPECT(gptoss_tokenizer_get_num_tokens(tokenizer, &vocab) == gptoss_status_success);
  EXPECT(vocab == 201088);
  EXPECT(gptoss_tokenizer_encode(tokenizer, prompt, strlen(prompt), 0, tokens, 64, &n_tokens) ==
         gptoss_status_success);
  EXPECT(n_tokens > 0);

  EXPECT(gptoss_context_create(model, 32, &context) == gptoss_status_success);
  EXPECT(gptoss_context_get_logits(context, NULL, 0, &n) == gptoss_status_invalid_state);
  EXPECT(gptoss_context_append_tokens(context, n_tokens, tokens) == gptoss_status_success);
  EXPECT(gptoss_context_process(context) == gptoss_status_success);
  logits = (float*)malloc(vocab * sizeof(float));
  EXPECT(gptoss_context_get_logits(context, logits, 10, &n) == gptoss_status_buffer_too_small);
  EXPECT(n == vocab);
  EXPECT(gptoss_context_get_logits(context, logits, vocab, &n) == gptoss_status_success);

  EXPECT(gptoss_sampler_options_init(&sopt) == gptoss_status_success);
  sopt.temperature = 0.0f;
  EXPECT(gptoss_sampler_create(&sopt, &sampler) == gptoss_status_success);
  EXPECT(gptoss_context_sample(context, sampler, &first) == gptoss_status_success);
  /* Greedy = argmax of the logits just read. */
  for (i = 1, n = 0; i < vocab; ++i)
    if (logits[i] > logits[n]) n = i;
  EXPECT(first == (uint32_t)n);
  EXPECT(gptoss_context_sample(context, sampler, &again) == gptoss_status_success);
  EXPECT(again == first);

  /* Overflow: nothing is appended. */
  {
    uint32_t many[40];
    size_t before = 0, after = 0;
    memset(many, 0, sizeof(many));
    EXPECT(gptoss_context_get_num_tokens(context, &before) == gptoss_status_success);
    EXPECT(gptoss_context_append_tokens(context, 40, many) == gptoss_status_context_overflow);
    EXPECT(gptoss_context_get_num_tokens(context, &after) == gptoss_status_success);
    EXPECT(before == after);
  }
  sopt.top_p = 2.0f;
  {
    gptoss_sampler_t bad = NULL;
    EXPECT(gptoss_sampler_create(&sopt, &bad) == gptoss_status_invalid_argument);
    EXPECT(bad == NULL);
    EXPECT(strstr(gptoss_get_last_error_message(), "top_p") != NULL);
  }

  free(logits);
  EXPECT(gptoss_sampler_release(sampler) == gptoss_status_success);
  /* The context keeps the model alive after the caller's release. */
  EXPECT(gptoss_model_release(model) == gptoss_status_success);
  EXPECT(gptoss_context_process(context) == gptoss_status_success);
  EXPECT(gptoss_context_release(context) == gptoss_status_success);
  EXPECT(gptoss_tokenizer_release(tokenizer) == gptoss_status_success);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C API smoke test passed\n");
  return 0;
}
