// The CPU backend plugin: entry points, devices, buffers, weights. Kernels: cpu_ops.cpp.
#include "cpu_backend.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "formats.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace gptoss::cpu {

const gptoss_host_api* g_host = nullptr;

namespace {

int32_t device_count() { return 1; }

void device_describe(int32_t, char* out, size_t capacity) {
  if (capacity == 0) return;
  std::snprintf(out, capacity, "CPU (%u hardware threads, %s kernels)",
                std::thread::hardware_concurrency(), isa_name(isa_selected()));
}

gptoss_status device_open(int32_t device, uint32_t num_threads, void** dev_out) {
  if (device != 0 || dev_out == nullptr) return gptoss_status_invalid_argument;
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    const Isa isa = isa_selected();
    *dev_out = new Device(num_threads, isa);
    if (g_host != nullptr && g_host->log != nullptr) {
      char msg[96];
      std::snprintf(msg, sizeof msg, "cpu backend: %u threads, %s kernels", num_threads,
                    isa_name(isa));
      g_host->log(gptoss_log_level_info, msg);
    }
  } catch (...) {
    return gptoss_status_insufficient_resources;
  }
  return gptoss_status_success;
}

void device_close(void* dev_) {
  auto* dev = static_cast<Device*>(dev_);
  if (dev == nullptr) return;
  if (dev->profile.enabled() && g_host != nullptr && g_host->log != nullptr) {
    const std::string r = dev->profile.report();
    if (!r.empty()) g_host->log(gptoss_log_level_info, ("cpu profile: " + r).c_str());
  }
  for (const auto& [bytes, p] : dev->cached) munmap(p, bytes);
  delete dev;
}

gptoss_status device_set_precision(void* dev, gptoss_precision precision) {
  if (dev == nullptr) return gptoss_status_invalid_argument;
  if (precision != gptoss_precision_fast && precision != gptoss_precision_exact)
    return gptoss_status_invalid_argument;
  static_cast<Device*>(dev)->quantize_activations = precision == gptoss_precision_fast;
  return gptoss_status_success;
}

const char* last_error(void* dev) {
  return dev ? static_cast<Device*>(dev)->last_error.c_str() : "";
}

gptoss_status stream_create(void* dev, void** stream_out) {
  *stream_out = new (std::nothrow) Stream{static_cast<Device*>(dev)};
  return *stream_out ? gptoss_status_success : gptoss_status_insufficient_memory;
}
void stream_destroy(void*, void* stream) { delete static_cast<Stream*>(stream); }
gptoss_status stream_synchronize(void*) { return gptoss_status_success; }  // ops are synchronous

// Every buffer is an anonymous mapping (zero-filled lazily: a large KV pool costs memory only
// as it fills). The core allocates a step's buffers anew at every forward step; unmapping and
// faulting them in again each decode step cost more than the step's arithmetic on small
// models, so freed buffers up to kCacheMaxBuffer are kept (kCacheMaxTotal in all) and handed
// out again, zeroed, to an allocation of the same page-rounded size.
constexpr size_t kCacheMaxBuffer = size_t(64) << 20;
constexpr size_t kCacheMaxTotal = size_t(256) << 20;

size_t page_round(size_t bytes) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// A zeroed anonymous mapping of `bytes` (page-rounded). Decode writes the KV cache one token
// at a time, and a fault per new 4 KiB page (a new page of every full-attention layer's K and
// V every other token) made kv_write cost 23 us per call on the 20b shape (~0.5 ms per decode
// token; a fault is an exit to the hypervisor in a VM). So: under 2 MiB the pages are all
// populated now (one system call instead of a fault each); from 2 MiB up the mapping is
// 2 MiB-aligned and asks for transparent huge pages, so a large KV pool still costs memory
// only as it fills, one fault per 2 MiB (1024 tokens of an f32 K or V at 512 wide).
void* map_buffer(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < kHuge) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* area = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  const uintptr_t a = reinterpret_cast<uintptr_t>(area);
  const uintptr_t at = (a + kHuge - 1) & ~uintptr_t(kHuge - 1);
  if (at > a) munmap(area, at - a);
  if (a + kHuge > at) munmap(reinterpret_cast<void*>(at + bytes), a + kHuge - at);
  void* p = reinterpret_cast<void*>(at);
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

gptoss_status buffer_alloc(void* dev_, size_t bytes, void** buf_out) {
  auto* dev = static_cast<Device*>(dev_);
  if (buf_out == nullptr) return gptoss_status_invalid_argument;
  bytes = page_round(bytes == 0 ? 1 : bytes);
  {
    std::lock_guard<std::mutex> lock(dev->alloc_mutex);
    auto it = dev->cached.find(bytes);
    if (it != dev->cached.end()) {
      void* p = it->second;
      dev->cached.erase(it);
      dev->cached_bytes -= bytes;
      dev->mapped.emplace(p, bytes);
      std::memset(p, 0, bytes);
      *buf_out = p;
      return gptoss_status_success;
    }
  }
  void* p = map_buffer(bytes);
  if (p == nullptr) return gptoss_status_insufficient_memory;
  try {
    std::lock_guard<std::mutex> lock(dev->alloc_mutex);
    dev->mapped.emplace(p, bytes);
  } catch (const std::bad_alloc&) {
    munmap(p, bytes);
    return gptoss_status_insufficient_memory;
  }
  *buf_out = p;
  return gptoss_status_success;
}

void buffer_free(void* dev_, void* buf) {
  if (buf == nullptr) return;
  auto* dev = static_cast<Device*>(dev_);
  std::lock_guard<std::mutex> lock(dev->alloc_mutex);
  auto it = dev->mapped.find(buf);
  if (it == dev->mapped.end()) return;  // not ours: ignore rather than corrupt the heap
  const size_t bytes = it->second;
  dev->mapped.erase(it);
  if (bytes <= kCacheMaxBuffer && dev->cached_bytes + bytes <= kCacheMaxTotal) {
    try {
      dev->cached.emplace(bytes, buf);
      dev->cached_bytes += bytes;
      return;
    } catch (const std::bad_alloc&) {
    }
  }
  munmap(buf, bytes);
}

gptoss_status buffer_write(void*, void* buf, size_t offset, const void* host, size_t bytes) {
  std::memcpy(static_cast<uint8_t*>(buf) + offset, host, bytes);
  return gptoss_status_success;
}
gptoss_status buffer_read(void*, const void* buf, size_t offset, void* host, size_t bytes) {
  std::memcpy(host, static_cast<const uint8_t*>(buf) + offset, bytes);
  return gptoss_status_success;
}
gptoss_status buffer_copy(void*, void* dst, size_t dst_offset, const void* src, size_t src_offset,
                          size_t bytes) {
  std::memmove(static_cast<uint8_t*>(dst) + dst_offset,
               static_cast<const uint8_t*>(src) + src_offset, bytes);
  return gptoss_status_success;
}

size_t row_bytes_of(gptoss_dtype dtype, size_t cols) {
  switch (dtype) {
    case gptoss_dtype_f32: return cols * 4;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16: return cols * 2;
    case gptoss_dtype_q8_0: return cols / 32 * 34;
    case gptoss_dtype_mxfp4: return cols / 32 * 16;
  }
  return 0;
}

gptoss_status weight_upload(void* dev_, const gptoss_tensor_desc* desc, void** weight_out) {
  auto* dev = static_cast<Device*>(dev_);
  if (desc == nullptr || desc->ndim < 1 || desc->ndim > 4) return gptoss_status_invalid_argument;
  auto w = std::make_unique<Weight>();
  w->dtype = desc->dtype;
  w->ndim = desc->ndim;
  w->rows = 1;
  for (uint32_t i = 0; i < desc->ndim; ++i) {
    w->shape[i] = desc->shape[i];
    if (desc->shape[i] <= 0) return gptoss_status_invalid_argument;
    if (i + 1 < desc->ndim) w->rows *= size_t(desc->shape[i]);
  }
  w->cols = size_t(desc->shape[desc->ndim - 1]);
  const bool blocked = desc->dtype == gptoss_dtype_q8_0 || desc->dtype == gptoss_dtype_mxfp4;
  if (blocked && w->cols % 32 != 0) {
    dev->last_error = std::string(desc->name) + ": row length not a multiple of 32";
    return gptoss_status_unsupported_argument;
  }
  w->row_bytes = row_bytes_of(desc->dtype, w->cols);
  if (w->row_bytes == 0) return gptoss_status_unsupported_argument;
  if (desc->data_size != w->rows * w->row_bytes) {
    dev->last_error = std::string(desc->name) + ": data size does not match its shape";
    return gptoss_status_invalid_argument;
  }
  const size_t scale_bytes = desc->dtype == gptoss_dtype_mxfp4 ? w->rows * (w->cols / 32) : 0;
  if (scale_bytes != (desc->dtype == gptoss_dtype_mxfp4 ? desc->scales_size : 0)) {
    dev->last_error = std::string(desc->name) + ": scales size does not match its shape";
    return gptoss_status_invalid_argument;
  }
  try {
    if (desc->flags & GPTOSS_TENSOR_PERSISTENT) {
      w->data = static_cast<const uint8_t*>(desc->data);
      w->scales = static_cast<const uint8_t*>(desc->scales);
    } else {
      // A converted tensor (GGUF experts: the whole 11 GB of the 20b's): in 2 MiB pages like
      // mapped weights (4 KiB pages made every expert piece pay TLB misses).
      const size_t bytes = desc->data_size + scale_bytes;
      void* p = map_buffer(bytes);
      if (p == nullptr) return gptoss_status_insufficient_memory;
      w->owned_map = std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
      auto* dst = static_cast<uint8_t*>(p);
      // Over the pool: most of the time is the kernel zeroing the new pages as they fault in
      // (a single thread spent 12 s of a 27 s GGUF load of the 20b in it).
      const auto* src = static_cast<const uint8_t*>(desc->data);
      constexpr size_t kChunk = size_t(2) << 20;
      dev->pool.parallel_for((desc->data_size + kChunk - 1) / kChunk, [&](size_t b, size_t e, unsigned) {
        const size_t lo = b * kChunk, hi = std::min(desc->data_size, e * kChunk);
        std::memcpy(dst + lo, src + lo, hi - lo);
      });
      w->data = dst;
      if (scale_bytes) {
        std::memcpy(dst + desc->data_size, desc->scales, scale_bytes);
        w->scales = dst + desc->data_size;
      }
    }
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  *weight_out = w.release();
  return gptoss_status_success;
}

void weight_free(void*, void* weight) { delete static_cast<Weight*>(weight); }

// Weight bytes an op call reads (OpProfile::add_bytes): zero but for the weight-streaming ops.
template <OpKind K>
struct WeightBytes {
  template <typename... A>
  static uint64_t of(A...) {
    return 0;
  }
};
template <>
struct WeightBytes<OpKind::linear> {
  template <typename... A>
  static uint64_t of(const void*, const void* weight, A...) {
    const auto* w = static_cast<const Weight*>(weight);
    return w ? weight_rows_bytes(*w, w->rows) : 0;
  }
};
template <>
struct WeightBytes<OpKind::router> : WeightBytes<OpKind::linear> {};
template <>
struct WeightBytes<OpKind::moe> {
  static uint64_t of(const void*, const void* ids, const void*, const void* mlp1, const void*,
                     const void* mlp2, const void*, size_t n_tokens, size_t, size_t, size_t top_k,
                     float, void*) {
    if (mlp1 == nullptr || mlp2 == nullptr) return 0;
    return routed_expert_bytes(static_cast<const int32_t*>(ids), n_tokens * top_k,
                               *static_cast<const Weight*>(mlp1), *static_cast<const Weight*>(mlp2));
  }
};

// An op slot that adds its wall time (and the weight bytes it read) to the device's OpProfile
// when profiling is on.
template <OpKind K, auto Fn>
struct Timed;
template <OpKind K, typename... A, gptoss_status (*Fn)(void*, A...)>
struct Timed<K, Fn> {
  static gptoss_status call(void* stream, A... a) {
    if (stream == nullptr || !static_cast<Stream*>(stream)->dev->profile.enabled())
      return Fn(stream, a...);
    const auto t0 = std::chrono::steady_clock::now();
    const gptoss_status st = Fn(stream, a...);
    OpProfile& p = static_cast<Stream*>(stream)->dev->profile;
    p.add(K, std::chrono::steady_clock::now() - t0);
    if (st == gptoss_status_success) p.add_bytes(K, WeightBytes<K>::of(a...));
    return st;
  }
};

}  // namespace

const gptoss_backend_api kApi = {
    /* .struct_size        = */ sizeof(gptoss_backend_api),
    /* .abi_major          = */ GPTOSS_BACKEND_ABI_MAJOR,
    /* .abi_minor          = */ GPTOSS_BACKEND_ABI_MINOR,
    /* .name               = */ "cpu",
    /* .device_count       = */ device_count,
    /* .device_describe    = */ device_describe,
    /* .device_open        = */ device_open,
    /* .device_close       = */ device_close,
    /* .last_error         = */ last_error,
    /* .stream_create      = */ stream_create,
    /* .stream_destroy     = */ stream_destroy,
    /* .stream_synchronize = */ stream_synchronize,
    /* .buffer_alloc       = */ buffer_alloc,
    /* .buffer_free        = */ buffer_free,
    /* .buffer_write       = */ buffer_write,
    /* .buffer_read        = */ buffer_read,
    /* .buffer_copy        = */ buffer_copy,
    /* .weight_upload      = */ weight_upload,
    /* .weight_free        = */ weight_free,
    /* .embedding          = */ Timed<OpKind::embedding, op_embedding>::call,
    /* .rmsnorm            = */ Timed<OpKind::rmsnorm, op_rmsnorm>::call,
    /* .linear             = */ Timed<OpKind::linear, op_linear>::call,
    /* .rope               = */ Timed<OpKind::rope, op_rope>::call,
    /* .kv_write           = */ Timed<OpKind::kv_write, op_kv_write>::call,
    /* .attention          = */ Timed<OpKind::attention, op_attention>::call,
    /* .router             = */ Timed<OpKind::router, op_router>::call,
    /* .moe                = */ Timed<OpKind::moe, op_moe>::call,
    /* .add                = */ Timed<OpKind::add, op_add>::call,
    /* .device_set_precision = */ device_set_precision,
};

}  // namespace gptoss::cpu

extern "C" {

GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) { return 10; }

GPTOSS_PLUGIN_EXPORT gptoss_status gptoss_backend_init(const gptoss_host_api* host,
                                                       const gptoss_backend_api** api_out) {
  if (host == nullptr || api_out == nullptr) return gptoss_status_invalid_argument;
  if (host->abi_major != GPTOSS_BACKEND_ABI_MAJOR) return gptoss_status_unsupported_system;
  gptoss::cpu::g_host = host;
  *api_out = &gptoss::cpu::kApi;
  return gptoss_status_success;
}

}  // extern "C"
