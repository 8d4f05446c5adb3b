// Freezes the released layout of the plugin ABI: a slot that moves breaks every plugin built
// against an older header, so any change here must be an append (and a minor version bump).
#include <cstddef>

#include "gptoss/backend.h"

#define GPTOSS_SLOT_AT(field, index)                                                        \
  static_assert(offsetof(gptoss_backend_api, field) ==                                      \
                    offsetof(gptoss_backend_api, device_count) + (index) * sizeof(void*),   \
                "ABI 1.0 slot " #field " moved")

// Header: struct_size, abi_major, abi_minor, name.
static_assert(offsetof(gptoss_backend_api, struct_size) == 0);
static_assert(offsetof(gptoss_backend_api, abi_major) == sizeof(size_t));
static_assert(offsetof(gptoss_backend_api, abi_minor) == sizeof(size_t) + 2);
static_assert(offsetof(gptoss_backend_api, name) == sizeof(size_t) + sizeof(void*));

// ABI 1.0
GPTOSS_SLOT_AT(device_count, 0);
GPTOSS_SLOT_AT(device_describe, 1);
GPTOSS_SLOT_AT(device_open, 2);
GPTOSS_SLOT_AT(device_close, 3);
GPTOSS_SLOT_AT(last_error, 4);
GPTOSS_SLOT_AT(stream_create, 5);
GPTOSS_SLOT_AT(stream_destroy, 6);
GPTOSS_SLOT_AT(stream_synchronize, 7);
GPTOSS_SLOT_AT(buffer_alloc, 8);
GPTOSS_SLOT_AT(buffer_free, 9);
GPTOSS_SLOT_AT(buffer_write, 10);
GPTOSS_SLOT_AT(buffer_read, 11);
GPTOSS_SLOT_AT(buffer_copy, 12);
GPTOSS_SLOT_AT(weight_upload, 13);
GPTOSS_SLOT_AT(weight_free, 14);
GPTOSS_SLOT_AT(embedding, 15);
GPTOSS_SLOT_AT(rmsnorm, 16);
GPTOSS_SLOT_AT(linear, 17);
GPTOSS_SLOT_AT(rope, 18);
GPTOSS_SLOT_AT(kv_write, 19);
GPTOSS_SLOT_AT(attention, 20);
GPTOSS_SLOT_AT(router, 21);
GPTOSS_SLOT_AT(moe, 22);
GPTOSS_SLOT_AT(add, 23);
// ABI 1.1
GPTOSS_SLOT_AT(device_set_precision, 24);

static_assert(sizeof(gptoss_tensor_desc) == 104, "gptoss_tensor_desc layout changed");
static_assert(sizeof(gptoss_attn_token) == 16, "gptoss_attn_token layout changed");
static_assert(sizeof(gptoss_rope_params) == 48, "gptoss_rope_params layout changed");
static_assert(offsetof(gptoss_host_api, log) == sizeof(size_t) + 8);
