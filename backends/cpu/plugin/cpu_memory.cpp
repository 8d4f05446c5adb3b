#include "cpu_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace gptoss::cpu {

namespace {
constexpr size_t kHuge = size_t(2) << 20;

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
}  // namespace

size_t page_round(size_t bytes) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// Decode writes the KV cache one token at a time, and a fault per new 4 KiB page (a new page
// of every full-attention layer's K and V every other token) is costly: in a VM each is an exit
// to the hypervisor.
// So: under 2 MiB the pages are all populated now (one system call instead of a fault each);
// from 2 MiB up the mapping is 2 MiB-aligned and asks for transparent huge pages, so a large
// KV cache still costs memory only as it fills, one fault per 2 MiB (1024 tokens of an f32 K
// or V at 512 wide).
void* map_buffer(size_t bytes) {
  bytes = page_round(bytes);
  if (bytes < kHuge) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* area =
      mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  const uintptr_t a = reinterpret_cast<uintptr_t>(area);
  const uintptr_t at = (a + kHuge - 1) & ~uintptr_t(kHuge - 1);
  if (at > a) munmap(area, at - a);
  if (a + kHuge > at) munmap(reinterpret_cast<void*>(at + bytes), a + kHuge - at);
  void* p = reinterpret_cast<void*>(at);
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

size_t kv_region_bytes(const KvCache& kv) {
  const size_t elem = kv.dtype == gptoss_kv_dtype_f32 ? 4 : 2;
  const size_t bytes = page_round(kv.max_pages * kv.page_size * kv.kv_dim * elem);
  return bytes < kHuge ? bytes : (bytes + kHuge - 1) / kHuge * kHuge;
}

namespace {

// The tensors repacked to a lanes layout where the device's level reads it (Weight::bf16_lanes,
// Weight::q8_0_lanes): the attention projections, whose prefill GEMMs and decode GEMVs it
// speeds up. Not a bf16 unembedding (its own kernels read its rows), nor the embedding (a row
// lookup).
bool is_attention_projection(int role) {
  return role == gptoss_tensor_attn_q || role == gptoss_tensor_attn_k ||
         role == gptoss_tensor_attn_v || role == gptoss_tensor_attn_out;
}

// MXFP4 experts in whole tiles of 16 rows per expert (Weight::mxfp4_lanes): one stream per
// thread in decode, and no transposition left for the prefill panels.
bool is_expert_matrix_in_tiles(const gptoss_tensor_desc& d) {
  return (d.role == gptoss_tensor_mlp1 || d.role == gptoss_tensor_mlp2) && d.ndim >= 2 &&
         d.shape[d.ndim - 2] % 16 == 0;
}

// Whether [p, p + n) lies inside one read-only mapping of a file (the loader's mapping of the
// checkpoint), from /proc/self/maps.
bool in_read_only_file_mapping(const void* p, size_t n) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  bool found = false;
  char line[512];
  while (!found && std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t start = 0, end = 0;
    char perms[8] = {};
    unsigned long long offset = 0, inode = 0;
    unsigned dev_major = 0, dev_minor = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %x:%x %llu", &start, &end, perms,
                    &offset, &dev_major, &dev_minor, &inode) != 7)
      continue;
    if (start <= lo && hi <= end) found = inode != 0 && perms[1] != 'w';
    if (start <= lo && lo < end) break;
  }
  std::fclose(f);
  return found;
}

// The pages wholly inside [p, p + n) leave the process's resident set.
void drop_pages(const void* p, size_t n) {
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

// Source bytes a repack takes at a time before it drops their pages (below).
constexpr size_t kRepackChunkBytes = size_t(32) << 20;

}  // namespace

gptoss_status make_weight(ThreadPool& pool, const gptoss_tensor_desc& desc,
                          const UploadRepacks& repacks, gptoss_backend_weight_t* out,
                          std::string& why) {
  const std::string name = desc.name ? desc.name : "(unnamed tensor)";
  if (desc.ndim < 1 || desc.ndim > 4) {
    why = name + ": ndim must be 1..4";
    return gptoss_status_invalid_argument;
  }
  auto w = std::make_unique<Weight>();
  w->dtype = desc.dtype;
  w->ndim = desc.ndim;
  w->rows = 1;
  w->first_expert = desc.first_expert;
  w->logits_only = desc.role == gptoss_tensor_unembedding;
  for (uint32_t i = 0; i < desc.ndim; ++i) {
    w->shape[i] = desc.shape[i];
    if (desc.shape[i] <= 0) {
      why = name + ": a dimension is not positive";
      return gptoss_status_invalid_argument;
    }
    if (i + 1 < desc.ndim) w->rows *= size_t(desc.shape[i]);
  }
  w->cols = size_t(desc.shape[desc.ndim - 1]);
  const bool blocked = desc.dtype == gptoss_dtype_q8_0 || desc.dtype == gptoss_dtype_mxfp4;
  if (blocked && w->cols % 32 != 0) {
    why = name + ": row length not a multiple of 32";
    return gptoss_status_unsupported_argument;
  }
  w->row_bytes = row_bytes_of(desc.dtype, w->cols);
  if (w->row_bytes == 0) {
    why = name + ": unknown dtype " + std::to_string(int(desc.dtype));
    return gptoss_status_unsupported_argument;
  }
  if (desc.data_size != w->rows * w->row_bytes || desc.data == nullptr) {
    why = name + ": data size does not match its shape";
    return gptoss_status_invalid_argument;
  }
  const size_t scale_bytes = desc.dtype == gptoss_dtype_mxfp4 ? w->rows * (w->cols / 32) : 0;
  if (scale_bytes != (desc.dtype == gptoss_dtype_mxfp4 ? desc.scales_size : 0) ||
      (scale_bytes && desc.scales == nullptr)) {
    why = name + ": scales size does not match its shape";
    return gptoss_status_invalid_argument;
  }
  try {
    const bool whole_tiles = w->rows % 16 == 0;
    const bool projection = is_attention_projection(desc.role) && whole_tiles;
    const bool bf16_lanes = repacks.bf16 != nullptr && projection &&
                            desc.dtype == gptoss_dtype_bf16 && w->cols % 2 == 0;
    // A Q8_0 unembedding too: one token reads the tiles as one stream per thread, faster than
    // the rows, and several take the int16 tiles (the bf16 one keeps its pairs kernel).
    const bool q8_0_lanes = repacks.q8_0 != nullptr && desc.dtype == gptoss_dtype_q8_0 &&
                            (projection || (desc.role == gptoss_tensor_unembedding && whole_tiles));
    const bool mxfp4_lanes = repacks.mxfp4 != nullptr && desc.dtype == gptoss_dtype_mxfp4 &&
                             is_expert_matrix_in_tiles(desc);
    if (bf16_lanes || q8_0_lanes || mxfp4_lanes) {
      const size_t bytes = desc.data_size + scale_bytes;
      void* p = map_buffer(bytes);
      if (p == nullptr) {
        why = name + ": out of memory";
        return gptoss_status_insufficient_memory;
      }
      w->owned_map = std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, page_round(bytes)); });
      // A persistent tensor that is repacked is not read again: where it lies in a read-only
      // file mapping (the loader's, which the kernel reads back from the file should anything
      // touch it again), its pages leave the resident set as the repack passes them, so the copy
      // never sits beside the whole source (a large one would raise the peak by its size). A
      // host's own memory is left alone (dropping anonymous pages would zero them).
      const bool persistent = desc.flags & GPTOSS_TENSOR_PERSISTENT;
      const bool release = persistent && in_read_only_file_mapping(desc.data, desc.data_size);
      const bool release_scales =
          persistent && scale_bytes && in_read_only_file_mapping(desc.scales, scale_bytes);
      const size_t tiles = w->rows / 16, tile_bytes = 16 * w->row_bytes;
      const size_t chunk = std::max<size_t>(1, kRepackChunkBytes / tile_bytes);
      const auto* src = static_cast<const uint8_t*>(desc.data);
      for (size_t t0 = 0; t0 < tiles; t0 += chunk) {
        const size_t t1 = std::min(tiles, t0 + chunk);
        pool.parallel_for(t1 - t0, [&](size_t b, size_t e, unsigned) {
          auto* dst = static_cast<uint8_t*>(p);
          if (bf16_lanes) {
            repacks.bf16(static_cast<const uint16_t*>(desc.data), w->cols, t0 + b, t0 + e,
                         static_cast<uint16_t*>(p));
          } else if (q8_0_lanes) {
            repacks.q8_0(src, w->cols, t0 + b, t0 + e, dst);
          } else {
            repacks.mxfp4(src, static_cast<const uint8_t*>(desc.scales), w->cols, t0 + b, t0 + e,
                          dst, dst + desc.data_size);
          }
        });
        if (release) drop_pages(src + t0 * tile_bytes, (t1 - t0) * tile_bytes);
      }
      if (release) drop_pages(src, desc.data_size);  // the pages across chunks' boundaries
      if (release_scales) drop_pages(desc.scales, scale_bytes);
      w->data = static_cast<const uint8_t*>(p);
      if (scale_bytes) w->scales = w->data + desc.data_size;
      w->bf16_lanes = bf16_lanes;
      w->q8_0_lanes = q8_0_lanes;
      w->mxfp4_lanes = mxfp4_lanes;
    } else if (desc.flags & GPTOSS_TENSOR_PERSISTENT) {
      w->data = static_cast<const uint8_t*>(desc.data);
      w->scales = static_cast<const uint8_t*>(desc.scales);
    } else {
      // A converted tensor (GGUF experts: the whole 11 GB of the 20b's): in 2 MiB pages like
      // mapped weights (4 KiB pages made every expert piece pay TLB misses).
      const size_t bytes = desc.data_size + scale_bytes;
      void* p = map_buffer(bytes);
      if (p == nullptr) {
        why = name + ": out of memory";
        return gptoss_status_insufficient_memory;
      }
      w->owned_map = std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, page_round(bytes)); });
      auto* dst = static_cast<uint8_t*>(p);
      // Over the pool: most of the time is the kernel zeroing the new pages as they fault in
      // (a single thread spent 12 s of a 27 s GGUF load of the 20b in it).
      const auto* src = static_cast<const uint8_t*>(desc.data);
      constexpr size_t kChunk = size_t(2) << 20;
      pool.parallel_for((desc.data_size + kChunk - 1) / kChunk, [&](size_t b, size_t e, unsigned) {
        const size_t lo = b * kChunk, hi = std::min(desc.data_size, e * kChunk);
        std::memcpy(dst + lo, src + lo, hi - lo);
      });
      w->data = dst;
      if (scale_bytes) {
        std::memcpy(dst + desc.data_size, desc.scales, scale_bytes);
        w->scales = dst + desc.data_size;
      }
    }
  } catch (const std::bad_alloc&) {
    why = name + ": out of memory";
    return gptoss_status_insufficient_memory;
  }
  *out = reinterpret_cast<gptoss_backend_weight_t>(w.release());
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
