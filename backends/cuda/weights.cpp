// Weight upload: each canonical tensor to the device once, in the layout the kernels take.
//   MXFP4 experts:   as the checkpoint stores them (codes, then scales, in one allocation);
//   dense matrices:  bf16 or f32 as given; f16 and Q8_0 widened to f32 (exact; the kernels
//                    read bf16 or f32);
//   vectors:         norms, biases (also the [experts, rows] bias tables), sinks: f32.
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "../cpu/kernels/formats.hpp"  // the scalar conversions of the canonical dtypes
#include "cuda_backend.hpp"

namespace gptoss::cuda {
namespace {

bool is_vector_role(gptoss_tensor_role r) {
  switch (r) {
    case gptoss_tensor_final_norm:
    case gptoss_tensor_attn_norm:
    case gptoss_tensor_mlp_norm:
    case gptoss_tensor_attn_q_bias:
    case gptoss_tensor_attn_k_bias:
    case gptoss_tensor_attn_v_bias:
    case gptoss_tensor_attn_out_bias:
    case gptoss_tensor_attn_sinks:
    case gptoss_tensor_router_bias:
    case gptoss_tensor_mlp1_bias:
    case gptoss_tensor_mlp2_bias:
      return true;
    default:
      return false;
  }
}

size_t row_bytes_of(gptoss_dtype dtype, size_t cols) {
  switch (dtype) {
    case gptoss_dtype_f32:
      return cols * 4;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16:
      return cols * 2;
    case gptoss_dtype_q8_0:
      return cols / 32 * 34;
    case gptoss_dtype_mxfp4:
      return cols / 32 * 16;
  }
  return 0;
}

// Row `row` of a bf16 / f16 / f32 / Q8_0 tensor widened to f32.
void widen_row(const gptoss_tensor_desc& d, size_t row, size_t cols, float* out) {
  const uint8_t* p = static_cast<const uint8_t*>(d.data) + row * row_bytes_of(d.dtype, cols);
  for (size_t i = 0; i < cols; ++i) {
    uint16_t h;
    switch (d.dtype) {
      case gptoss_dtype_f32:
        std::memcpy(&out[i], p + 4 * i, 4);
        break;
      case gptoss_dtype_bf16:
        std::memcpy(&h, p + 2 * i, 2), out[i] = cpu::bf16_to_f32(h);
        break;
      case gptoss_dtype_f16:
        std::memcpy(&h, p + 2 * i, 2), out[i] = cpu::f16_to_f32(h);
        break;
      default:
        break;
    }
  }
  if (d.dtype == gptoss_dtype_q8_0)
    for (size_t b = 0; b < cols / 32; ++b) cpu::q8_0_decode_block(p + 34 * b, out + 32 * b);
}

// One device allocation for the tensor's parts (MXFP4: codes, then scales at a 256-byte
// boundary), filled by the device's uploader. `keep` holds converted host data alive.
gptoss_status upload(Device& dev, Weight& w, const void* parts[2], const size_t sizes[2],
                     const std::shared_ptr<const void>& keep, bool persistent) {
  const size_t offset1 = (sizes[0] + 255) / 256 * 256;
  w.bytes = offset1 + sizes[1];
  if (cudaError_t e = cudaMalloc(&w.block, w.bytes); e != cudaSuccess) {
    w.block = nullptr;
    return fail(e, w.name + ": cudaMalloc of " + std::to_string(w.bytes) + " bytes");
  }
  for (int i = 0; i < 2; ++i)
    if (sizes[i] > 0)
      dev.uploader->enqueue(static_cast<char*>(w.block) + (i == 0 ? 0 : offset1), parts[i], sizes[i], keep,
                            w.name);
  // Between weights_begin and weights_end, a tensor whose host bytes persist (or that we
  // converted) is copied in the background; otherwise the host memory is valid during this
  // call only: wait for it.
  if (dev.async_weights && persistent) return gptoss_status_success;
  if (gptoss_status st = dev.uploader->wait(nullptr); st != gptoss_status_success) {
    cudaFree(w.block);
    w.block = nullptr;
    return st;
  }
  return gptoss_status_success;
}

}  // namespace

gptoss_status weights_begin(gptoss_backend_device_t dev_, uint64_t total_bytes, size_t) {
  if (dev_ == nullptr) return fail(gptoss_status_invalid_argument, "weights_begin: no device");
  Device& dev = device_of(dev_);
  if (gptoss_status st = dev.activate(); st != gptoss_status_success) return st;
  size_t free_bytes = 0, total = 0;
  if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total); e != cudaSuccess) return fail(e, "weights_begin");
  if (total_bytes > free_bytes)  // before gigabytes are read
    return fail(gptoss_status_insufficient_memory,
                "the model's weights need " + std::to_string(total_bytes >> 20) + " MiB; " + dev.info.name +
                    " has " + std::to_string(free_bytes >> 20) + " MiB free of " +
                    std::to_string(total >> 20));
  dev.async_weights = true;
  return gptoss_status_success;
}

gptoss_status weights_end(gptoss_backend_device_t dev_) {
  if (dev_ == nullptr) return fail(gptoss_status_invalid_argument, "weights_end: no device");
  Device& dev = device_of(dev_);
  dev.async_weights = false;
  return dev.uploader->wait(nullptr);
}

gptoss_status weight_upload(gptoss_backend_device_t dev_, const gptoss_tensor_desc* desc,
                            gptoss_backend_weight_t* weight_out) {
  Device* dev = dev_ != nullptr ? &device_of(dev_) : nullptr;
  if (dev == nullptr || desc == nullptr || weight_out == nullptr || desc->data == nullptr)
    return fail(gptoss_status_invalid_argument, "weight_upload: null argument");
  const std::string name = desc->name != nullptr ? desc->name : "(unnamed tensor)";
  if (desc->ndim < 1 || desc->ndim > 4)
    return fail(gptoss_status_invalid_argument, name + ": ndim " + std::to_string(desc->ndim));
  size_t rows = 1;
  for (uint32_t i = 0; i < desc->ndim; ++i) {
    if (desc->shape[i] <= 0) return fail(gptoss_status_invalid_argument, name + ": empty dimension");
    if (i + 1 < desc->ndim) rows *= size_t(desc->shape[i]);
  }
  const size_t cols = size_t(desc->shape[desc->ndim - 1]);
  const bool blocked = desc->dtype == gptoss_dtype_q8_0 || desc->dtype == gptoss_dtype_mxfp4;
  if (blocked && cols % 32 != 0)
    return fail(gptoss_status_unsupported_argument, name + ": row length not a multiple of 32");
  const size_t row_bytes = row_bytes_of(desc->dtype, cols);
  if (row_bytes == 0) return fail(gptoss_status_unsupported_argument, name + ": unknown dtype");
  if (desc->data_size != rows * row_bytes)
    return fail(gptoss_status_invalid_argument, name + ": data size does not match its shape");
  const size_t scale_bytes = desc->dtype == gptoss_dtype_mxfp4 ? rows * (cols / 32) : 0;
  if (scale_bytes != (desc->dtype == gptoss_dtype_mxfp4 ? desc->scales_size : 0) ||
      (scale_bytes > 0 && desc->scales == nullptr))
    return fail(gptoss_status_invalid_argument, name + ": scales size does not match its shape");
  if (gptoss_status st = dev->activate(); st != gptoss_status_success) return st;

  Weight* w = new (std::nothrow) Weight;
  if (w == nullptr) return fail(gptoss_status_insufficient_memory, name);
  w->name = name;
  w->ndim = desc->ndim;
  w->first_expert = desc->struct_size >= offsetof(gptoss_tensor_desc, first_expert) + sizeof(int32_t)
                        ? desc->first_expert
                        : 0;
  const bool persistent = (desc->flags & GPTOSS_TENSOR_PERSISTENT) != 0;
  for (uint32_t i = 0; i < desc->ndim; ++i) w->shape[i] = desc->shape[i];
  gptoss_status st = gptoss_status_success;
  try {
    if (desc->dtype == gptoss_dtype_mxfp4) {
      if (desc->ndim < 2) {
        delete w;
        return fail(gptoss_status_unsupported_argument, name + ": an MXFP4 vector");
      }
      w->kind = Weight::Kind::mxfp4;
      const void* parts[2] = {desc->data, desc->scales};
      const size_t sizes[2] = {desc->data_size, scale_bytes};
      st = upload(*dev, *w, parts, sizes, nullptr, persistent);
      const int64_t experts = desc->ndim == 3 ? desc->shape[0] : 1;
      w->mxfp4 = Mxfp4View{static_cast<const uint8_t*>(w->block),
                           static_cast<const uint8_t*>(w->block) + (desc->data_size + 255) / 256 * 256,
                           experts, int64_t(rows) / experts, int64_t(cols)};
    } else {
      const bool vector = desc->ndim == 1 || is_vector_role(desc->role);
      w->kind = vector ? Weight::Kind::vector : Weight::Kind::dense;
      const bool keep = desc->dtype == gptoss_dtype_f32 || (!vector && desc->dtype == gptoss_dtype_bf16);
      std::shared_ptr<std::vector<float>> wide;
      const void* parts[2] = {desc->data, nullptr};
      size_t sizes[2] = {desc->data_size, 0};
      if (!keep) {
        wide = std::make_shared<std::vector<float>>(rows * cols);
        for (size_t r = 0; r < rows; ++r) widen_row(*desc, r, cols, wide->data() + r * cols);
        parts[0] = wide->data();
        sizes[0] = wide->size() * sizeof(float);
      }
      st = upload(*dev, *w, parts, sizes, wide, persistent || wide != nullptr);
      w->dense = DenseView{w->block, keep && desc->dtype == gptoss_dtype_bf16 ? Dt::bf16 : Dt::f32,
                           int64_t(rows), int64_t(cols)};
    }
  } catch (const std::bad_alloc&) {
    st = fail(gptoss_status_insufficient_memory, name + ": host memory for the conversion");
  }
  if (st != gptoss_status_success) {
    delete w;
    return st;
  }
  *weight_out = reinterpret_cast<gptoss_backend_weight_t>(w);
  return gptoss_status_success;
}

void weight_free(gptoss_backend_device_t dev, gptoss_backend_weight_t weight) {
  if (weight == nullptr) return;
  auto* w = const_cast<Weight*>(&weight_of(weight));
  if (dev != nullptr) {
    device_of(dev).activate();
    device_of(dev).uploader->wait(nullptr);  // its copy may still be running
    ++device_of(dev).epoch;                  // no captured step may point at it any more
  }
  cudaFree(w->block);
  delete w;
}

}  // namespace gptoss::cuda
