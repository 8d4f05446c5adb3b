#pragma once
// Every slot of the CUDA backend's table (cuda_backend.cpp assembles it): devices, streams
// and steps (devices.cpp), buffers (memory.cpp), weights (weights.cpp), KV caches (kv.cpp),
// ops (ops.cpp).
#include "gptoss/backend.h"

namespace gptoss::cuda::slots {

using Dev = gptoss_backend_device_t;
using Stm = gptoss_backend_stream_t;
using Buf = gptoss_backend_buffer_t;
using Wt = gptoss_backend_weight_t;
using Kv = gptoss_backend_kv_t;
using Ev = gptoss_backend_event_t;

int32_t device_count();
void device_describe(int32_t device, char* out, size_t capacity);
gptoss_status device_open(int32_t device, uint32_t num_threads, Dev* dev_out);
void device_close(Dev dev);
const char* last_error(Dev dev);
gptoss_status device_set_precision(Dev dev, gptoss_precision precision);
gptoss_status device_memory_info(Dev dev, size_t* free_bytes, size_t* total_bytes);
gptoss_status device_properties(Dev dev, gptoss_backend_device_properties* out);
gptoss_status stream_create(Dev dev, Stm* stream_out);
void stream_destroy(Dev dev, Stm stream);
gptoss_status stream_synchronize(Stm stream);
gptoss_status event_create(Dev dev, Ev* ev_out);
void event_destroy(Dev dev, Ev ev);
gptoss_status event_record(Stm stream, Ev ev);
gptoss_status stream_wait_event(Stm stream, Ev ev);
gptoss_status step_begin(Stm stream, const gptoss_step_hints* hints);
gptoss_status step_end(Stm stream);

gptoss_status buffer_alloc(Dev dev, size_t bytes, Buf* buf_out);
void buffer_free(Dev dev, Buf buf);
gptoss_status buffer_view(Dev dev, Buf buf, size_t offset, size_t bytes, Buf* view_out);
gptoss_status buffer_write(Stm stream, Buf buf, size_t offset, const void* host, size_t bytes);
gptoss_status buffer_read(Stm stream, Buf buf, size_t offset, void* host, size_t bytes);
gptoss_status buffer_copy(Stm stream, Buf dst, size_t dst_offset, Buf src, size_t src_offset, size_t bytes);
gptoss_status buffer_copy_peer(Stm src_stream, Buf src, size_t src_offset, Dev dst_dev, Buf dst,
                               size_t dst_offset, size_t bytes);

gptoss_status embedding(Stm, Wt, Buf, size_t, Buf);
gptoss_status rmsnorm(Stm, Buf, Wt, size_t, size_t, float, Buf);
gptoss_status linear(Stm, Buf, Wt, Wt, size_t, size_t, size_t, Buf);
gptoss_status rope(Stm, Buf, Buf, size_t, size_t, size_t, const gptoss_rope_params*);
gptoss_status kv_write(Stm, Kv, uint32_t, Buf, Buf, Buf, size_t);
gptoss_status attention(Stm, Buf, Kv, uint32_t, Wt, Buf, Buf, const gptoss_attn_shape*, Buf);
gptoss_status router(Stm, Buf, Wt, Wt, size_t, size_t, size_t, size_t, Buf, Buf);
gptoss_status moe(Stm, Buf, Buf, Buf, Wt, Wt, Wt, Wt, size_t, size_t, size_t, size_t, float, Buf);
gptoss_status add(Stm, Buf, Buf, size_t);
gptoss_status linear_qkv(Stm, Buf, Wt, Wt, Wt, Wt, Wt, Wt, size_t, size_t, size_t, size_t, Buf, Buf, Buf);
gptoss_status add_rmsnorm(Stm, Buf, Buf, Wt, size_t, size_t, float, Buf);
gptoss_status rope_kv_write(Stm, Buf, Buf, Buf, Buf, size_t, size_t, const gptoss_rope_params*, Kv, uint32_t,
                            Buf);
gptoss_status sample(Stm, Buf, Buf, Buf, const gptoss_sample_shape*, Buf);

}  // namespace gptoss::cuda::slots
