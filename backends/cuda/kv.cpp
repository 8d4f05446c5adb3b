// KV caches in this backend's layout: per layer, one K and one V allocation of
// pages * page_size slots of n_kv_heads * head_dim elements (f32 or bf16). Growing
// reallocates array by array, so that only one array lives twice at a time (a cache sized
// from what a GPU has left could not be copied whole), copying the pages already there on the
// device's copy stream.
#include <algorithm>
#include <new>
#include <string>

#include "cuda_backend.hpp"

namespace gptoss::cuda {
namespace {

size_t layer_bytes(const KvCache& kv, size_t pages) {
  return pages * kv.desc.page_size * size_t(kv.kv_dim) * (kv.dt == Dt::bf16 ? 2 : 4);
}

void release(KvCache& kv) {
  for (void* p : kv.k) cudaFree(p);
  for (void* p : kv.v) cudaFree(p);
  kv.k.clear();
  kv.v.clear();
}

}  // namespace

gptoss_status kv_create(gptoss_backend_device_t dev_, const gptoss_kv_desc* desc, size_t n_pages,
                        gptoss_backend_kv_t* kv_out) {
  if (dev_ == nullptr || desc == nullptr || kv_out == nullptr || desc->struct_size < sizeof(gptoss_kv_desc))
    return fail(gptoss_status_invalid_argument, "kv_create: null argument");
  if (desc->dtype != gptoss_kv_dtype_f32 && desc->dtype != gptoss_kv_dtype_bf16)
    return fail(
        gptoss_status_unsupported_argument,
        "kv_create: KV dtype " + std::to_string(int(desc->dtype)) + " (the CUDA backend keeps f32 or bf16)");
  if (desc->n_layers == 0 || desc->n_kv_heads == 0 || desc->head_dim == 0 || desc->page_size == 0 ||
      n_pages > desc->max_pages)
    return fail(gptoss_status_invalid_argument, "kv_create: empty shape or more pages than max_pages");
  Device& dev = device_of(dev_);
  if (gptoss_status st = dev.activate(); st != gptoss_status_success) return st;
  auto* kv = new (std::nothrow) KvCache;
  if (kv == nullptr) return fail(gptoss_status_insufficient_memory, "kv_create");
  kv->desc = *desc;
  kv->dt = desc->dtype == gptoss_kv_dtype_bf16 ? Dt::bf16 : Dt::f32;
  kv->kv_dim = int64_t(desc->n_kv_heads) * desc->head_dim;
  kv->pages = n_pages;
  const size_t bytes = std::max<size_t>(layer_bytes(*kv, n_pages), 256);
  for (uint32_t l = 0; l < desc->n_layers; ++l)
    for (auto* side : {&kv->k, &kv->v}) {
      void* p = nullptr;
      if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
        release(*kv);
        delete kv;
        return fail(e, "kv_create: " + std::to_string(desc->n_layers) + " layers of " +
                           std::to_string(n_pages) + " pages");
      }
      side->push_back(p);
      kv->capacity.push_back(n_pages);
    }
  *kv_out = reinterpret_cast<gptoss_backend_kv_t>(kv);
  return gptoss_status_success;
}

gptoss_status kv_grow(gptoss_backend_device_t dev_, gptoss_backend_kv_t kv_, size_t n_pages) {
  if (dev_ == nullptr || kv_ == nullptr)
    return fail(gptoss_status_invalid_argument, "kv_grow: null argument");
  KvCache& kv = kv_of(kv_);
  if (n_pages < kv.pages || n_pages > kv.desc.max_pages)
    return fail(gptoss_status_invalid_argument, "kv_grow: " + std::to_string(n_pages) + " pages (now " +
                                                    std::to_string(kv.pages) + ", at most " +
                                                    std::to_string(kv.desc.max_pages) + ")");
  if (n_pages == kv.pages) return gptoss_status_success;
  Device& dev = device_of(dev_);
  if (gptoss_status st = dev.activate(); st != gptoss_status_success) return st;
  ++dev.epoch;  // a captured step points at the old arrays
  const size_t used = layer_bytes(kv, kv.pages), bytes = layer_bytes(kv, n_pages);
  for (size_t i = 0; i < kv.capacity.size(); ++i) {
    if (kv.capacity[i] >= n_pages) continue;  // grown by an earlier call that then failed
    void*& side = i % 2 == 0 ? kv.k[i / 2] : kv.v[i / 2];
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    // On the device's copy stream, waited for: a device-to-device cudaMemcpy on the legacy
    // stream may return before it is done and is not ordered with the ops' non-blocking
    // streams, which read the new array from the next step on. (No op is pending on the
    // cache when the core calls kv_grow, so nothing before the copy needs ordering.)
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(p, side, used, cudaMemcpyDeviceToDevice, dev.copy_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(dev.copy_stream);
    if (e != cudaSuccess) {
      cudaFree(p);
      // The cache keeps its pages; the arrays grown so far just have room to spare.
      return fail(e, "kv_grow to " + std::to_string(n_pages) + " pages");
    }
    cudaFree(side);
    side = p;
    kv.capacity[i] = n_pages;
  }
  kv.pages = n_pages;
  return gptoss_status_success;
}

void kv_destroy(gptoss_backend_device_t dev, gptoss_backend_kv_t kv) {
  if (kv == nullptr) return;
  if (dev != nullptr) {
    device_of(dev).activate();
    ++device_of(dev).epoch;  // no captured step may point at it any more
  }
  release(kv_of(kv));
  delete &kv_of(kv);
}

}  // namespace gptoss::cuda
