/*
 * The plugin ABI of include/gptoss/backend.h as a binary abidw can read: a plugin's two
 * exports, compiled with debug information, through whose types every struct and enum of the
 * header is reachable. scripts/abi-check.sh compares it with abi/gptoss-backend-abi-<major>.abi.
 * Never loaded: it is named so that the registry's scan (libgptoss-backend-*.so) skips it.
 */
#include "gptoss/backend.h"

GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) { return 0; }

GPTOSS_PLUGIN_EXPORT enum gptoss_status gptoss_backend_init(
    const struct gptoss_host_api* host, const struct gptoss_backend_api** api_out) {
  (void)host;
  (void)api_out;
  return gptoss_status_unsupported_system;
}

/* Types the host and plugins exchange as the contents of device buffers (attention's sequence
 * descriptors, sample's rows and results), which the two exports above do not reach. A type
 * added to backend.h that no slot names goes here. */
GPTOSS_PLUGIN_EXPORT void gptoss_backend_abi_probe_untyped(const struct gptoss_attn_seq* seqs,
                                                          const struct gptoss_sample_row* rows,
                                                          const struct gptoss_sample_result* results) {
  (void)seqs;
  (void)rows;
  (void)results;
}
