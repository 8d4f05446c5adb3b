/* Constrained decoding from C99: a JSON Schema grammar, a constraint attached to a sampler,
 * a document sampled on the model until the constraint finishes, and the failure paths.
 * argv[1]: an HF model directory, argv[2]: tokenizer.json. */
#include <stdio.h>
#include <string.h>

#include "expect.h"
#include "gptoss.h"

int main(int argc, char** argv) {
  struct gptoss_model_options mo;
  struct gptoss_sampler_options so;
  struct gptoss_constraint_options co;
  gptoss_model_t model = NULL;
  gptoss_tokenizer_t tok = NULL;
  gptoss_grammar_t grammar = NULL;
  gptoss_constraint_t constraint = NULL;
  gptoss_context_t ctx = NULL;
  gptoss_sampler_t sampler = NULL;
  static uint32_t mask[GPTOSS_MASK_WORDS(201088)];
  size_t n = 0, i, text_size = 0;
  int32_t finished = 0;
  char text[512];
  const char* schema = "{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}},"
                       " \"required\": [\"ok\"], \"additionalProperties\": false}";

  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_DIR TOKENIZER_JSON\n", argv[0]);
    return 2;
  }
  gptoss_model_options_init(&mo);
  mo.backend = "cpu";
  mo.tokenizer_path = argv[2];
  if (gptoss_model_create_with_options(argv[1], &mo, &model) != gptoss_status_success) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], gptoss_get_last_error_message());
    return 1;
  }
  EXPECT(gptoss_model_get_tokenizer(model, &tok) == gptoss_status_success);

  EXPECT(gptoss_grammar_create_json_schema(tok, "{\"minLength\": 1}", &grammar) ==
         gptoss_status_unsupported_argument);
  EXPECT(grammar == NULL);
  EXPECT(gptoss_grammar_create_json_schema(tok, schema, &grammar) == gptoss_status_success);
  EXPECT(gptoss_constraint_options_init(&co) == gptoss_status_success);
  EXPECT(gptoss_constraint_create(grammar, &co, &constraint) == gptoss_status_success);
  EXPECT(gptoss_constraint_fill_mask(constraint, mask, GPTOSS_MASK_WORDS(201088), &n) ==
         gptoss_status_success);
  EXPECT(n == GPTOSS_MASK_WORDS(201088));

  gptoss_sampler_options_init(&so);
  so.seed = 7;
  EXPECT(gptoss_sampler_create(&so, &sampler) == gptoss_status_success);
  EXPECT(gptoss_sampler_set_constraint(sampler, constraint) == gptoss_status_success);
  EXPECT(gptoss_context_create(model, 128, &ctx) == gptoss_status_success);
  EXPECT(gptoss_context_append_chars(ctx, "JSON:", 5, &n) == gptoss_status_success);
  for (i = 0; i < 32 && !finished; ++i) {
    uint32_t token = 0;
    const void* bytes = NULL;
    size_t size = 0;
    EXPECT(gptoss_context_sample(ctx, sampler, &token) == gptoss_status_success);
    EXPECT(gptoss_constraint_is_finished(constraint, &finished) == gptoss_status_success);
    if (finished) break;
    EXPECT(gptoss_tokenizer_decode(tok, token, &bytes, &size) == gptoss_status_success);
    if (text_size + size < sizeof text) {
      memcpy(text + text_size, bytes, size);
      text_size += size;
    }
    EXPECT(gptoss_context_append_tokens(ctx, 1, &token) == gptoss_status_success);
  }
  text[text_size] = '\0';
  EXPECT(finished == 1);
  EXPECT(strcmp(text, "{\"ok\":true}") == 0 || strcmp(text, "{\"ok\":false}") == 0 ||
         strcmp(text, "{\"ok\": true}") == 0 || strcmp(text, "{\"ok\": false}") == 0);
  EXPECT(gptoss_constraint_accept_token(constraint, 0) == gptoss_status_invalid_state);

  EXPECT(gptoss_sampler_release(sampler) == gptoss_status_success);
  EXPECT(gptoss_constraint_release(constraint) == gptoss_status_success);
  EXPECT(gptoss_grammar_release(grammar) == gptoss_status_success);
  EXPECT(gptoss_context_release(ctx) == gptoss_status_success);
  EXPECT(gptoss_tokenizer_release(tok) == gptoss_status_success);
  EXPECT(gptoss_model_release(model) == gptoss_status_success);
  if (failures == 0) printf("constrain_smoke: ok (%s)\n", text);
  return failures == 0 ? 0 : 1;
}
