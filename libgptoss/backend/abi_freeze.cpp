// Freezes the released layout of the plugin ABI: a slot that moves breaks every plugin built
// against the header, so any change here must be an append (and a minor version bump).
#include <cstddef>

#include "gptoss/backend.h"

#define GPTOSS_SLOT_AT(field, index)                                                        \
  static_assert(offsetof(gptoss_backend_api, field) ==                                      \
                    offsetof(gptoss_backend_api, device_count) + (index) * sizeof(void*),   \
                "ABI 2.0 slot " #field " moved")

// Header: struct_size, abi_major, abi_minor, name (never move, whatever the version).
static_assert(offsetof(gptoss_backend_api, struct_size) == 0);
static_assert(offsetof(gptoss_backend_api, abi_major) == sizeof(size_t));
static_assert(offsetof(gptoss_backend_api, abi_minor) == sizeof(size_t) + 2);
static_assert(offsetof(gptoss_backend_api, name) == sizeof(size_t) + sizeof(void*));

// ABI 2.0
static_assert(offsetof(gptoss_backend_api, flags) == sizeof(size_t) + 2 * sizeof(void*));
static_assert(offsetof(gptoss_backend_api, device_count) == sizeof(size_t) + 3 * sizeof(void*));
GPTOSS_SLOT_AT(device_count, 0);
GPTOSS_SLOT_AT(device_describe, 1);
GPTOSS_SLOT_AT(device_open, 2);
GPTOSS_SLOT_AT(device_close, 3);
GPTOSS_SLOT_AT(last_error, 4);
GPTOSS_SLOT_AT(device_set_precision, 5);
GPTOSS_SLOT_AT(device_memory_info, 6);
GPTOSS_SLOT_AT(stream_create, 7);
GPTOSS_SLOT_AT(stream_destroy, 8);
GPTOSS_SLOT_AT(stream_synchronize, 9);
GPTOSS_SLOT_AT(event_create, 10);
GPTOSS_SLOT_AT(event_destroy, 11);
GPTOSS_SLOT_AT(event_record, 12);
GPTOSS_SLOT_AT(stream_wait_event, 13);
GPTOSS_SLOT_AT(buffer_alloc, 14);
GPTOSS_SLOT_AT(buffer_free, 15);
GPTOSS_SLOT_AT(buffer_view, 16);
GPTOSS_SLOT_AT(buffer_write, 17);
GPTOSS_SLOT_AT(buffer_read, 18);
GPTOSS_SLOT_AT(buffer_copy, 19);
GPTOSS_SLOT_AT(buffer_copy_peer, 20);
GPTOSS_SLOT_AT(weights_begin, 21);
GPTOSS_SLOT_AT(weight_upload, 22);
GPTOSS_SLOT_AT(weights_end, 23);
GPTOSS_SLOT_AT(weight_free, 24);
GPTOSS_SLOT_AT(kv_create, 25);
GPTOSS_SLOT_AT(kv_grow, 26);
GPTOSS_SLOT_AT(kv_destroy, 27);
GPTOSS_SLOT_AT(step_begin, 28);
GPTOSS_SLOT_AT(step_end, 29);
GPTOSS_SLOT_AT(embedding, 30);
GPTOSS_SLOT_AT(rmsnorm, 31);
GPTOSS_SLOT_AT(linear, 32);
GPTOSS_SLOT_AT(rope, 33);
GPTOSS_SLOT_AT(kv_write, 34);
GPTOSS_SLOT_AT(attention, 35);
GPTOSS_SLOT_AT(router, 36);
GPTOSS_SLOT_AT(moe, 37);
GPTOSS_SLOT_AT(add, 38);
GPTOSS_SLOT_AT(linear_qkv, 39);
GPTOSS_SLOT_AT(add_rmsnorm, 40);
GPTOSS_SLOT_AT(rope_kv_write, 41);
GPTOSS_SLOT_AT(sample, 42);
// ABI 2.1
GPTOSS_SLOT_AT(device_properties, 43);
static_assert(sizeof(gptoss_backend_api) ==
                  offsetof(gptoss_backend_api, device_count) + 44 * sizeof(void*),
              "a slot was added without a line here");

// Structs shared with plugins.
static_assert(sizeof(gptoss_tensor_desc) == 104 && offsetof(gptoss_tensor_desc, first_expert) == 100,
              "gptoss_tensor_desc layout changed");
static_assert(sizeof(gptoss_rope_params) == 48, "gptoss_rope_params layout changed");
static_assert(sizeof(gptoss_attn_seq) == 16, "gptoss_attn_seq layout changed");
static_assert(sizeof(gptoss_attn_shape) == 40, "gptoss_attn_shape layout changed");
static_assert(sizeof(gptoss_step_hints) == 32, "gptoss_step_hints layout changed");
static_assert(sizeof(gptoss_kv_desc) == 40, "gptoss_kv_desc layout changed");
static_assert(sizeof(gptoss_sample_row) == 32 && offsetof(gptoss_sample_row, uniform) == 16,
              "gptoss_sample_row layout changed");
static_assert(sizeof(gptoss_sample_result) == 16 + 8 * GPTOSS_SAMPLE_MAX_TOP,
              "gptoss_sample_result layout changed");
static_assert(sizeof(gptoss_sample_shape) == 32, "gptoss_sample_shape layout changed");
static_assert(offsetof(gptoss_host_api, log) == sizeof(size_t) + 8);
static_assert(sizeof(gptoss_backend_device_properties) == 24 &&
                  offsetof(gptoss_backend_device_properties, kernels) == 16,
              "gptoss_backend_device_properties layout changed");
