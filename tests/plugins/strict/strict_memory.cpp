// The strict device's weights (uploaded asynchronously until weights_end, host memory staged
// unless persistent) and KV caches (new pages filled with NaN through the inner kv_write).
#include <cstring>
#include <limits>

#include "strict.hpp"

namespace gptoss::strict {
namespace {

[[maybe_unused]] gptoss_status weights_begin(gptoss_backend_device_t, uint64_t, size_t) { return gptoss_status_success; }

gptoss_status weight_upload(gptoss_backend_device_t dev, const gptoss_tensor_desc* desc,
                            gptoss_backend_weight_t* out) {
  Device* d = dev_of(dev);
  if (desc == nullptr || desc->ndim < 1 || desc->ndim > 4 || desc->data == nullptr)
    return refuse(gptoss_status_invalid_argument, "weight_upload: bad desc");
  for (uint32_t i = 0; i < desc->ndim; ++i)
    if (desc->shape[i] <= 0) return refuse(gptoss_status_invalid_argument, "weight_upload: bad shape");
  gptoss_tensor_desc copy = *desc;
  auto name = std::make_shared<std::string>(desc->name ? desc->name : "");
  copy.name = name->c_str();
  std::shared_ptr<std::vector<uint8_t>> staged;
  if (!(desc->flags & GPTOSS_TENSOR_PERSISTENT)) {  // valid only now: stage it
    staged = std::make_shared<std::vector<uint8_t>>(desc->data_size + desc->scales_size);
    std::memcpy(staged->data(), desc->data, desc->data_size);
    if (desc->scales_size) std::memcpy(staged->data() + desc->data_size, desc->scales, desc->scales_size);
    copy.data = staged->data();
    copy.scales = desc->scales_size ? staged->data() + desc->data_size : nullptr;
  }
  Object w{Kind::weight, d, nullptr, 0};
  w.ndim = desc->ndim;
  for (uint32_t i = 0; i < desc->ndim; ++i) w.shape[i] = desc->shape[i];
  const uint64_t h = add(std::move(w));
  d->uploads.push("weight_upload", [d, h, copy, name, staged] {
    gptoss_backend_weight_t inner = nullptr;
    const gptoss_status st = g_inner->weight_upload(d->inner, &copy, &inner);
    if (Object* w = find(h, Kind::weight); w && st == gptoss_status_success) w->inner = inner;
    return st;
  });
#ifdef STRICT_MINIMAL
  // Without weights_end an upload must be complete when weight_upload returns.
  std::string why;
  const gptoss_status st = d->uploads.wait(why);
  if (st != gptoss_status_success) {
    erase(h);
    return refuse(st, why);
  }
#endif
  *out = as<gptoss_backend_weight_t>(h);
  return gptoss_status_success;
}

[[maybe_unused]] gptoss_status weights_end(gptoss_backend_device_t dev) {
  std::string why;
  const gptoss_status st = dev_of(dev)->uploads.wait(why);
  if (st != gptoss_status_success) set_error(why);
  return st;
}

void weight_free(gptoss_backend_device_t dev, gptoss_backend_weight_t w) {
  std::string ignored;
  dev_of(dev)->uploads.wait(ignored);  // an upload still running finishes first
  Object* o = find(id(w), Kind::weight);
  if (o == nullptr) return;
  if (o->inner) g_inner->weight_free(o->dev->inner, static_cast<gptoss_backend_weight_t>(o->inner));
  erase(id(w));
}

gptoss_status poison_pages(Device& d, const Object& kv, size_t first_page, size_t end_page) {
  const size_t kv_dim = size_t(kv.kv.n_kv_heads) * kv.kv.head_dim, P = kv.kv.page_size;
  const size_t n = (end_page - first_page) * P;
  if (n == 0) return gptoss_status_success;
  std::vector<float> nan(n * kv_dim, std::numeric_limits<float>::quiet_NaN());
  std::vector<int32_t> slots(n);
  for (size_t i = 0; i < n; ++i) slots[i] = int32_t(first_page * P + i);
  gptoss_backend_buffer_t rows = nullptr, slot_buf = nullptr;
  gptoss_status st = g_inner->buffer_alloc(d.inner, nan.size() * 4, &rows);
  if (st == gptoss_status_success) st = g_inner->buffer_alloc(d.inner, slots.size() * 4, &slot_buf);
  if (st == gptoss_status_success)
    st = g_inner->buffer_write(d.inner_stream, rows, 0, nan.data(), nan.size() * 4);
  if (st == gptoss_status_success)
    st = g_inner->buffer_write(d.inner_stream, slot_buf, 0, slots.data(), slots.size() * 4);
  for (uint32_t l = 0; l < kv.kv.n_layers && st == gptoss_status_success; ++l)
    st = g_inner->kv_write(d.inner_stream, static_cast<gptoss_backend_kv_t>(kv.inner), l, rows, rows,
                           slot_buf, n);
  st = sync_inner(d, st);
  g_inner->buffer_free(d.inner, rows);
  g_inner->buffer_free(d.inner, slot_buf);
  return st;
}

gptoss_status kv_create(gptoss_backend_device_t dev, const gptoss_kv_desc* desc, size_t n_pages,
                        gptoss_backend_kv_t* out) {
  if (!allocation_allowed("kv_create")) return gptoss_status_insufficient_resources;
  Device* d = dev_of(dev);
  gptoss_backend_kv_t inner = nullptr;
  gptoss_status st = g_inner->kv_create(d->inner, desc, n_pages, &inner);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(d->inner));
  Object o{Kind::kv, d, inner, 0};
  o.kv = *desc;
  o.kv_pages = n_pages;
  st = poison_pages(*d, o, 0, n_pages);
  if (st != gptoss_status_success) {
    g_inner->kv_destroy(d->inner, inner);
    return st;
  }
  *out = as<gptoss_backend_kv_t>(add(std::move(o)));
  return gptoss_status_success;
}

gptoss_status kv_grow(gptoss_backend_device_t dev, gptoss_backend_kv_t kv, size_t n_pages) {
  Object* o = find(id(kv), Kind::kv);
  if (o == nullptr) return refuse(gptoss_status_invalid_argument, "kv_grow: not a KV cache");
  Device* d = dev_of(dev);
  const gptoss_status st = g_inner->kv_grow(d->inner, static_cast<gptoss_backend_kv_t>(o->inner), n_pages);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(d->inner));
  ++g_counters.kv_growths;
  const size_t old = o->kv_pages;
  o->kv_pages = n_pages;
  return poison_pages(*d, *o, old, n_pages);
}

void kv_destroy(gptoss_backend_device_t dev, gptoss_backend_kv_t kv) {
  Object* o = find(id(kv), Kind::kv);
  if (o == nullptr) return;
  g_inner->kv_destroy(dev_of(dev)->inner, static_cast<gptoss_backend_kv_t>(o->inner));
  erase(id(kv));
}

}  // namespace

void fill_memory_slots(gptoss_backend_api& a) {
  a.weight_upload = weight_upload;
  a.weight_free = weight_free;
  a.kv_create = kv_create;
  a.kv_grow = kv_grow;
  a.kv_destroy = kv_destroy;
#ifndef STRICT_MINIMAL
  a.weights_begin = weights_begin;
  a.weights_end = weights_end;
#endif
}

}  // namespace gptoss::strict
