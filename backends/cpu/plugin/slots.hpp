#pragma once
// The plugin's slots that cpu_backend.cpp defines (devices, streams, buffers, weights, KV
// caches), declared once for the function table (cpu_slots.cpp, which defines the op slots).
#include <cstddef>
#include <cstdint>

#include "gptoss/backend.h"

namespace gptoss::cpu::slots {
int32_t device_count();
void device_describe(int32_t, char*, size_t);
gptoss_status device_open(int32_t, uint32_t, gptoss_backend_device_t*);
void device_close(gptoss_backend_device_t);
const char* last_error(gptoss_backend_device_t);
gptoss_status device_set_precision(gptoss_backend_device_t, gptoss_precision);
gptoss_status device_memory_info(gptoss_backend_device_t, size_t*, size_t*);
gptoss_status device_properties(gptoss_backend_device_t, gptoss_backend_device_properties*);
gptoss_status stream_create(gptoss_backend_device_t, gptoss_backend_stream_t*);
void stream_destroy(gptoss_backend_device_t, gptoss_backend_stream_t);
gptoss_status stream_synchronize(gptoss_backend_stream_t);
gptoss_status buffer_alloc(gptoss_backend_device_t, size_t, gptoss_backend_buffer_t*);
void buffer_free(gptoss_backend_device_t, gptoss_backend_buffer_t);
gptoss_status buffer_view(gptoss_backend_device_t, gptoss_backend_buffer_t, size_t, size_t,
                          gptoss_backend_buffer_t*);
gptoss_status buffer_write(gptoss_backend_stream_t, gptoss_backend_buffer_t, size_t, const void*,
                           size_t);
gptoss_status buffer_read(gptoss_backend_stream_t, gptoss_backend_buffer_t, size_t, void*, size_t);
gptoss_status buffer_copy(gptoss_backend_stream_t, gptoss_backend_buffer_t, size_t,
                          gptoss_backend_buffer_t, size_t, size_t);
gptoss_status buffer_copy_peer(gptoss_backend_stream_t, gptoss_backend_buffer_t, size_t,
                               gptoss_backend_device_t, gptoss_backend_buffer_t, size_t, size_t);
gptoss_status weight_upload(gptoss_backend_device_t, const gptoss_tensor_desc*,
                            gptoss_backend_weight_t*);
void weight_free(gptoss_backend_device_t, gptoss_backend_weight_t);
gptoss_status kv_create(gptoss_backend_device_t, const gptoss_kv_desc*, size_t,
                        gptoss_backend_kv_t*);
gptoss_status kv_grow(gptoss_backend_device_t, gptoss_backend_kv_t, size_t);
void kv_destroy(gptoss_backend_device_t, gptoss_backend_kv_t);
}  // namespace gptoss::cpu::slots
