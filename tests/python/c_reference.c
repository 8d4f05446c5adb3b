/* The C API's own greedy/seeded generation, printed as token ids, for the Python tests to
 * compare against: c_reference MODEL TOKENIZER_JSON N TEMPERATURE SEED TOKEN...
 * Appends the given prompt tokens, then samples N tokens (appending each) and prints the
 * sampled ids on one line, followed by the argmax of the first logits on a second line. */
#include <gptoss.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what, enum gptoss_status status) {
  fprintf(stderr, "c_reference: %s: %s: %s\n", what, gptoss_status_to_string(status),
          gptoss_get_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: c_reference MODEL TOKENIZER_JSON N TEMPERATURE SEED TOKEN...\n");
    return 2;
  }
  struct gptoss_model_options mo;
  gptoss_model_options_init(&mo);
  mo.tokenizer_path = argv[2];
  gptoss_model_t model = NULL;
  enum gptoss_status s = gptoss_model_create_with_options(argv[1], &mo, &model);
  if (s != gptoss_status_success) return fail("model", s);

  size_t n_prompt = (size_t)(argc - 6);
  uint32_t* prompt = malloc(n_prompt * sizeof *prompt);
  for (size_t i = 0; i < n_prompt; ++i) prompt[i] = (uint32_t)strtoul(argv[6 + i], NULL, 10);

  gptoss_context_t ctx = NULL;
  if ((s = gptoss_context_create(model, 1024, &ctx)) != gptoss_status_success)
    return fail("context", s);
  if ((s = gptoss_context_append_tokens(ctx, n_prompt, prompt)) != gptoss_status_success)
    return fail("append", s);

  struct gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.temperature = (float)atof(argv[4]);
  so.seed = strtoull(argv[5], NULL, 10);
  gptoss_sampler_t sampler = NULL;
  if ((s = gptoss_sampler_create(&so, &sampler)) != gptoss_status_success)
    return fail("sampler", s);

  long n = atol(argv[3]);
  for (long i = 0; i < n; ++i) {
    uint32_t token = 0;
    if ((s = gptoss_context_sample(ctx, sampler, &token)) != gptoss_status_success)
      return fail("sample", s);
    printf(i ? " %u" : "%u", token);
    if ((s = gptoss_context_append_tokens(ctx, 1, &token)) != gptoss_status_success)
      return fail("append", s);
  }
  printf("\n");
  free(prompt);
  gptoss_sampler_release(sampler);
  gptoss_context_release(ctx);
  gptoss_model_release(model);
  return 0;
}
