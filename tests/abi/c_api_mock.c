/*
 * A stand-in for libgptoss for tests/abi/test_abi_policy.sh: a few exports of gptoss.h that
 * reach its versioned structs (passed in and filled in), an array-element struct and an enum,
 * built against edited copies of the header to see what the ABI check lets through.
 * MOCK_WITHOUT_RESET drops an export; MOCK_WITH_EXTRA adds one.
 */
#include "gptoss.h"

GPTOSS_API enum gptoss_status gptoss_model_create_with_options(
    const char* path, const struct gptoss_model_options* options, gptoss_model_t* model_out) {
  (void)path;
  (void)options;
  (void)model_out;
  return gptoss_status_success;
}

GPTOSS_API enum gptoss_status gptoss_model_get_info(gptoss_model_t model,
                                                    struct gptoss_model_info* info) {
  (void)model;
  (void)info;
  return gptoss_status_success;
}

GPTOSS_API enum gptoss_status gptoss_sampler_get_last_logprobs(
    gptoss_sampler_t sampler, struct gptoss_token_logprob* chosen,
    struct gptoss_token_logprob* alternatives, size_t capacity, size_t* n_out) {
  (void)sampler;
  (void)chosen;
  (void)alternatives;
  (void)capacity;
  (void)n_out;
  return gptoss_status_success;
}

#ifndef MOCK_WITHOUT_RESET
GPTOSS_API enum gptoss_status gptoss_context_reset(gptoss_context_t context) {
  (void)context;
  return gptoss_status_success;
}
#endif

#ifdef MOCK_WITH_EXTRA
GPTOSS_API enum gptoss_status gptoss_context_mock_added(gptoss_context_t context, size_t n);
GPTOSS_API enum gptoss_status gptoss_context_mock_added(gptoss_context_t context, size_t n) {
  (void)context;
  (void)n;
  return gptoss_status_success;
}
#endif
