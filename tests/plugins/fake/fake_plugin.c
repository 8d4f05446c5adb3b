/* A deliberately broken (or minimal) backend plugin, built once per FAKE_* variant, to check
 * that the registry refuses each kind of bad plugin with a clear reason. Its ops do nothing:
 * it is never used to run a model. */
#include <stddef.h>
#include <string.h>

#include "gptoss/backend.h"

#ifndef FAKE_NO_INIT

static int32_t device_count(void) { return 1; }
static void describe(int32_t d, char* out, size_t n) { (void)d; if (n) out[0] = 0; }
static enum gptoss_status dev_open(int32_t d, uint32_t t, gptoss_backend_device_t* o) {
  (void)d; (void)t; *o = NULL; return gptoss_status_success;
}
static void dev_close(gptoss_backend_device_t d) { (void)d; }
static const char* last_error(gptoss_backend_device_t d) { (void)d; return ""; }
static enum gptoss_status ev_create(gptoss_backend_device_t d, gptoss_backend_event_t* e) {
  (void)d; *e = NULL; return gptoss_status_success;
}

static struct gptoss_backend_api table;

GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) {
#ifdef FAKE_SCORE_ZERO
  return 0;
#else
  return 1;
#endif
}

#ifdef FAKE_SCORE_ZERO
GPTOSS_PLUGIN_EXPORT const char* gptoss_backend_unavailable_reason(void) { return "no fake device here"; }
#endif

GPTOSS_PLUGIN_EXPORT enum gptoss_status gptoss_backend_init(const struct gptoss_host_api* host,
                                                            const struct gptoss_backend_api** out) {
  (void)host;
#ifdef FAKE_INIT_FAILS
  (void)out; (void)&table; (void)device_count; (void)describe; (void)dev_open;
  (void)dev_close; (void)last_error; (void)ev_create;
  return gptoss_status_unsupported_system;
#else
  memset(&table, 0xff, sizeof(table)); /* garbage beyond the declared size must never be read */
  table.struct_size = sizeof(table);
  table.abi_major = GPTOSS_BACKEND_ABI_MAJOR;
  table.abi_minor = GPTOSS_BACKEND_ABI_MINOR;
  table.name = "fake";
  table.flags = 0;
  table.device_count = device_count;
  table.device_describe = describe;
  table.device_open = dev_open;
  table.device_close = dev_close;
  table.last_error = last_error;
  (void)ev_create;
#ifdef FAKE_ABI_MAJOR_1
  /* A plugin built against ABI 1. */
  table.abi_major = 1;
#endif
#ifdef FAKE_SMALL_TABLE
  /* A table that ends after last_error: every later slot is missing. */
  table.struct_size = offsetof(struct gptoss_backend_api, device_set_precision);
#endif
#ifdef FAKE_NULL_SLOT
  table.struct_size = sizeof(table);
  memset(&table.device_set_precision, 0,
         sizeof(table) - offsetof(struct gptoss_backend_api, device_set_precision));
#endif
#ifdef FAKE_HALF_EVENTS
  /* Every slot filled (with garbage: never called), but only one of the four event slots. */
  table.event_create = ev_create;
  table.event_destroy = NULL;
  table.event_record = NULL;
  table.stream_wait_event = NULL;
#endif
  *out = &table;
  return gptoss_status_success;
#endif
}
#else
/* No entry point at all. */
int gptoss_fake_plugin_without_entry_point;
#endif
