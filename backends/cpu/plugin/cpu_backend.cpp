// The CPU backend plugin: entry points, devices, streams, buffers, weights and KV caches.
// The op slots are in cpu_slots.cpp, the ops behind them in ops/, their kernels in kernels/.
#include "cpu_backend.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

#include "cpu_memory.hpp"
#include "slots.hpp"

namespace gptoss::cpu {

const gptoss_host_api* g_host = nullptr;

namespace {
thread_local std::string t_last_error;

// GPTOSS_CPU_DEVICES=N (1..64): the plugin offers N devices, so that a model can be split
// over devices without an accelerator; anything else is one device.
int32_t device_count_from_env() {
  const char* env = std::getenv("GPTOSS_CPU_DEVICES");
  if (env == nullptr || *env == '\0') return 1;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  return *end == '\0' && n >= 1 && n <= 64 ? int32_t(n) : 1;
}

void log_info(const char* msg) {
  if (g_host != nullptr && g_host->log != nullptr) g_host->log(gptoss_log_level_info, msg);
}

Device* D(gptoss_backend_device_t d) { return reinterpret_cast<Device*>(d); }
uint8_t* B(gptoss_backend_buffer_t b) { return reinterpret_cast<uint8_t*>(b); }
KvCache* K(gptoss_backend_kv_t k) { return reinterpret_cast<KvCache*>(k); }

gptoss_status refuse(gptoss_status st, std::string why) {
  set_last_error(std::move(why));
  return st;
}
}  // namespace

void set_last_error(std::string message) { t_last_error = std::move(message); }
const char* last_error_message() { return t_last_error.c_str(); }

namespace slots {

int32_t device_count() { return device_count_from_env(); }

void device_describe(int32_t device, char* out, size_t capacity) {
  if (capacity == 0) return;
  std::snprintf(out, capacity, "CPU %d of %d (%u hardware threads, %s kernels)", int(device),
                int(device_count_from_env()), std::thread::hardware_concurrency(),
                isa_name(isa_selected()));
}

gptoss_status device_open(int32_t device, uint32_t num_threads, gptoss_backend_device_t* dev_out) {
  if (dev_out == nullptr) return refuse(gptoss_status_invalid_argument, "dev_out is NULL");
  if (device < 0 || device >= device_count_from_env())
    return refuse(gptoss_status_invalid_argument,
                  "no CPU device " + std::to_string(device) + " (GPTOSS_CPU_DEVICES)");
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    const Isa isa = isa_selected();
    *dev_out = reinterpret_cast<gptoss_backend_device_t>(new Device(num_threads, isa));
    char msg[96];
    std::snprintf(msg, sizeof msg, "cpu backend device %d: %u threads, %s kernels", int(device),
                  num_threads, isa_name(isa));
    log_info(msg);
  } catch (...) {
    return refuse(gptoss_status_insufficient_resources, "could not start the CPU threads");
  }
  return gptoss_status_success;
}

void device_close(gptoss_backend_device_t dev_) {
  Device* dev = D(dev_);
  if (dev == nullptr) return;
  if (dev->profile.enabled()) {
    const std::string r = dev->profile.report();
    if (!r.empty()) log_info(("cpu profile: " + r).c_str());
  }
  delete dev;
}

const char* last_error(gptoss_backend_device_t) { return last_error_message(); }

gptoss_status device_set_precision(gptoss_backend_device_t dev, gptoss_precision precision) {
  if (dev == nullptr) return gptoss_status_invalid_argument;
  if (precision != gptoss_precision_fast && precision != gptoss_precision_exact)
    return refuse(gptoss_status_invalid_argument, "unknown precision");
  if (D(dev)->fast_layouts && precision != gptoss_precision_fast)
    return refuse(gptoss_status_invalid_argument,
                  "the precision is set before weight_upload: this device holds weights laid out "
                  "for the fast precision");
  D(dev)->quantize_activations = precision == gptoss_precision_fast;
  return gptoss_status_success;
}

// Every kernel level is batch invariant (GPTOSS_DEVICE_BATCH_INVARIANT), in both precisions:
// each level adds a row's products in one order fixed by the row and K alone, whichever path
// the chooser takes for the call's size, and attention folds keys in segments at absolute
// positions. tests/runtime/batch_invariance_test.cpp checks it per level (invariance.<level>).
bool batch_invariant(Isa) { return true; }

gptoss_status device_properties(gptoss_backend_device_t dev,
                                gptoss_backend_device_properties* out) {
  if (dev == nullptr || out == nullptr) return gptoss_status_invalid_argument;
  if (out->struct_size >= offsetof(gptoss_backend_device_properties, flags) + sizeof out->flags)
    out->flags = batch_invariant(D(dev)->isa) ? GPTOSS_DEVICE_BATCH_INVARIANT : 0u;
  if (out->struct_size >= offsetof(gptoss_backend_device_properties, kernels) + sizeof out->kernels)
    out->kernels = isa_name(D(dev)->isa);
  return gptoss_status_success;
}

// The machine's memory: every CPU device reports the same figures.
gptoss_status device_memory_info(gptoss_backend_device_t, size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return gptoss_status_invalid_argument;
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kib = 0, total = 0, avail = 0;
  std::string unit;
  while (f >> key >> kib >> unit) {
    if (key == "MemTotal:") total = kib * 1024;
    if (key == "MemAvailable:") avail = kib * 1024;
  }
  if (total == 0) return refuse(gptoss_status_unsupported_system, "no MemTotal in /proc/meminfo");
  *free_bytes = avail;
  *total_bytes = total;
  return gptoss_status_success;
}

gptoss_status stream_create(gptoss_backend_device_t dev, gptoss_backend_stream_t* stream_out) {
  auto* s = new (std::nothrow) Stream{D(dev)};
  if (s == nullptr) return gptoss_status_insufficient_memory;
  *stream_out = reinterpret_cast<gptoss_backend_stream_t>(s);
  return gptoss_status_success;
}
void stream_destroy(gptoss_backend_device_t, gptoss_backend_stream_t stream) {
  delete reinterpret_cast<Stream*>(stream);
}
gptoss_status stream_synchronize(gptoss_backend_stream_t) { return gptoss_status_success; }

gptoss_status buffer_alloc(gptoss_backend_device_t dev_, size_t bytes, gptoss_backend_buffer_t* buf_out) {
  Device* dev = D(dev_);
  if (buf_out == nullptr) return gptoss_status_invalid_argument;
  bytes = page_round(bytes == 0 ? 1 : bytes);
  void* p = map_buffer(bytes);
  if (p == nullptr) return refuse(gptoss_status_insufficient_memory, "mmap of " + std::to_string(bytes) + " bytes failed");
  try {
    std::lock_guard<std::mutex> lock(dev->alloc_mutex);
    dev->mapped.emplace(p, bytes);
  } catch (const std::bad_alloc&) {
    munmap(p, bytes);
    return gptoss_status_insufficient_memory;
  }
  *buf_out = reinterpret_cast<gptoss_backend_buffer_t>(p);
  return gptoss_status_success;
}

void buffer_free(gptoss_backend_device_t dev_, gptoss_backend_buffer_t buf) {
  if (buf == nullptr) return;
  Device* dev = D(dev_);
  std::lock_guard<std::mutex> lock(dev->alloc_mutex);
  auto it = dev->mapped.find(buf);
  if (it == dev->mapped.end()) return;  // a view, or not ours: nothing to release
  munmap(buf, it->second);
  dev->mapped.erase(it);
}

// A view is the address inside its parent.
gptoss_status buffer_view(gptoss_backend_device_t, gptoss_backend_buffer_t buf, size_t offset,
                          size_t, gptoss_backend_buffer_t* view_out) {
  if (buf == nullptr || view_out == nullptr) return gptoss_status_invalid_argument;
  *view_out = reinterpret_cast<gptoss_backend_buffer_t>(B(buf) + offset);
  return gptoss_status_success;
}

gptoss_status buffer_write(gptoss_backend_stream_t, gptoss_backend_buffer_t buf, size_t offset,
                           const void* host, size_t bytes) {
  std::memcpy(B(buf) + offset, host, bytes);
  return gptoss_status_success;
}
gptoss_status buffer_read(gptoss_backend_stream_t, gptoss_backend_buffer_t buf, size_t offset,
                          void* host, size_t bytes) {
  std::memcpy(host, B(buf) + offset, bytes);
  return gptoss_status_success;
}
gptoss_status buffer_copy(gptoss_backend_stream_t, gptoss_backend_buffer_t dst, size_t dst_offset,
                          gptoss_backend_buffer_t src, size_t src_offset, size_t bytes) {
  std::memcpy(B(dst) + dst_offset, B(src) + src_offset, bytes);
  return gptoss_status_success;
}
// Every CPU device shares the address space.
gptoss_status buffer_copy_peer(gptoss_backend_stream_t, gptoss_backend_buffer_t src,
                               size_t src_offset, gptoss_backend_device_t,
                               gptoss_backend_buffer_t dst, size_t dst_offset, size_t bytes) {
  std::memcpy(B(dst) + dst_offset, B(src) + src_offset, bytes);
  return gptoss_status_success;
}

gptoss_status weight_upload(gptoss_backend_device_t dev, const gptoss_tensor_desc* desc,
                            gptoss_backend_weight_t* weight_out) {
  if (desc == nullptr || weight_out == nullptr) return gptoss_status_invalid_argument;
  std::string why;
  const Kernels& k = *D(dev)->kernels;
  const bool fast = D(dev)->quantize_activations;
  const UploadRepacks repacks{k.repack_bf16_lanes, fast ? k.repack_q8_0_lanes : nullptr,
                              fast ? k.repack_mxfp4_lanes : nullptr};
  const gptoss_status st = make_weight(D(dev)->pool, *desc, repacks, weight_out, why);
  if (st != gptoss_status_success) {
    set_last_error(std::move(why));
    return st;
  }
  const Weight& w = *reinterpret_cast<const Weight*>(*weight_out);
  if (w.q8_0_lanes || w.mxfp4_lanes) D(dev)->fast_layouts = true;
  return st;
}

void weight_free(gptoss_backend_device_t, gptoss_backend_weight_t weight) {
  delete reinterpret_cast<Weight*>(weight);
}

gptoss_status kv_create(gptoss_backend_device_t, const gptoss_kv_desc* desc, size_t n_pages,
                        gptoss_backend_kv_t* kv_out) {
  if (desc == nullptr || kv_out == nullptr || desc->n_layers == 0 || desc->page_size == 0 ||
      desc->n_kv_heads == 0 || desc->head_dim == 0 || n_pages > desc->max_pages)
    return refuse(gptoss_status_invalid_argument, "bad KV cache description");
  if (desc->dtype != gptoss_kv_dtype_f32 && desc->dtype != gptoss_kv_dtype_bf16)
    return refuse(gptoss_status_unsupported_argument,
                  "KV dtype " + std::to_string(int(desc->dtype)) + " (the CPU backend has f32 and bf16)");
  auto kv = std::make_unique<KvCache>();
  kv->dtype = desc->dtype;
  kv->n_layers = desc->n_layers;
  kv->n_kv_heads = desc->n_kv_heads;
  kv->head_dim = desc->head_dim;
  kv->kv_dim = size_t(desc->n_kv_heads) * desc->head_dim;
  kv->page_size = desc->page_size;
  kv->max_pages = desc->max_pages;
  kv->pages = n_pages;
  kv->region_bytes = kv_region_bytes(*kv);
  kv->base = static_cast<uint8_t*>(map_buffer(2 * size_t(kv->n_layers) * kv->region_bytes));
  if (kv->base == nullptr) return refuse(gptoss_status_insufficient_memory, "KV cache mmap failed");
  *kv_out = reinterpret_cast<gptoss_backend_kv_t>(kv.release());
  return gptoss_status_success;
}

gptoss_status kv_grow(gptoss_backend_device_t, gptoss_backend_kv_t kv, size_t n_pages) {
  if (kv == nullptr || n_pages < K(kv)->pages || n_pages > K(kv)->max_pages)
    return refuse(gptoss_status_invalid_argument, "KV growth outside [current, max] pages");
  K(kv)->pages = n_pages;  // the whole range was reserved at creation
  return gptoss_status_success;
}

void kv_destroy(gptoss_backend_device_t, gptoss_backend_kv_t kv) {
  if (kv == nullptr) return;
  munmap(K(kv)->base, 2 * size_t(K(kv)->n_layers) * K(kv)->region_bytes);
  delete K(kv);
}

}  // namespace slots
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
