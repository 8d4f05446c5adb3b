// The strict device's devices, streams, events, buffers and step brackets, and the plugin's
// entry points (see strict.hpp).
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "strict.hpp"

namespace gptoss::strict {
namespace {

// ---- devices ----
int32_t device_count() { return g_inner->device_count(); }
void device_describe(int32_t device, char* out, size_t capacity) {
  char inner[200];
  g_inner->device_describe(device, inner, sizeof inner);
  std::snprintf(out, capacity, "strict test device over %s", inner);
}

gptoss_status device_open(int32_t device, uint32_t num_threads, gptoss_backend_device_t* out) {
  gptoss_backend_device_t inner = nullptr;
  gptoss_status st = g_inner->device_open(device, num_threads, &inner);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(nullptr));
  auto* d = new Device{device, inner, nullptr, {}, {}};
  st = g_inner->stream_create(inner, &d->inner_stream);
#ifdef STRICT_MINIMAL
  // Without device_set_precision a backend computes one way, treated as exact.
  if (st == gptoss_status_success) st = g_inner->device_set_precision(inner, gptoss_precision_exact);
#endif
  if (st != gptoss_status_success) {
    g_inner->device_close(inner);
    delete d;
    return refuse(st, "could not set up the inner CPU device");
  }
  *out = reinterpret_cast<gptoss_backend_device_t>(d);
  return gptoss_status_success;
}

void device_close(gptoss_backend_device_t dev) {
  Device* d = dev_of(dev);
  std::string ignored;
  d->uploads.wait(ignored);
  g_inner->stream_destroy(d->inner, d->inner_stream);
  g_inner->device_close(d->inner);
  delete d;
}

const char* last_error(gptoss_backend_device_t) { return error_message(); }

[[maybe_unused]] gptoss_status device_set_precision(gptoss_backend_device_t dev, gptoss_precision p) {
  return g_inner->device_set_precision(dev_of(dev)->inner, p);
}
[[maybe_unused]] gptoss_status device_memory_info(gptoss_backend_device_t dev, size_t* free_bytes, size_t* total) {
  return g_inner->device_memory_info(dev_of(dev)->inner, free_bytes, total);
}

// ---- streams and events ----
gptoss_status stream_create(gptoss_backend_device_t dev, gptoss_backend_stream_t* out) {
  if (!allocation_allowed("stream_create")) return gptoss_status_insufficient_resources;
  Device* d = dev_of(dev);
  auto s = std::make_shared<Stream>();
  s->dev = d;
  const gptoss_status st = g_inner->stream_create(d->inner, &s->inner);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(d->inner));
  Object o{Kind::stream, d, nullptr, 0};
  o.stream = s;
  *out = as<gptoss_backend_stream_t>(add(std::move(o)));
  return gptoss_status_success;
}

gptoss_status stream_synchronize(gptoss_backend_stream_t stream) {
  Stream* s = stream_of(stream);
  if (s == nullptr) return refuse(gptoss_status_invalid_argument, "stream_synchronize: not a stream");
  std::string why;
  const gptoss_status st = s->queue.wait(why);
  if (st != gptoss_status_success) set_error(why);
  return st;
}

void stream_destroy(gptoss_backend_device_t, gptoss_backend_stream_t stream) {
  Stream* s = stream_of(stream);
  if (s == nullptr) return;
  (void)stream_synchronize(stream);
  g_inner->stream_destroy(s->dev->inner, s->inner);
  erase(id(stream));
}

[[maybe_unused]] gptoss_status event_create(gptoss_backend_device_t dev, gptoss_backend_event_t* out) {
  if (!allocation_allowed("event_create")) return gptoss_status_insufficient_resources;
  Object o{Kind::event, dev_of(dev), nullptr, 0};
  o.event = std::make_shared<Event>();
  *out = as<gptoss_backend_event_t>(add(std::move(o)));
  return gptoss_status_success;
}
[[maybe_unused]] void event_destroy(gptoss_backend_device_t, gptoss_backend_event_t ev) { erase(id(ev)); }

[[maybe_unused]] gptoss_status event_record(gptoss_backend_stream_t stream, gptoss_backend_event_t ev) {
  Stream* s = stream_of(stream);
  Object* e = find(id(ev), Kind::event);
  if (s == nullptr || e == nullptr) return refuse(gptoss_status_invalid_argument, "event_record: bad handle");
  std::shared_ptr<Event> event = e->event;
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(event->m);
    n = ++event->recorded;
  }
  s->queue.push("event_record", [event, n] {
    std::lock_guard<std::mutex> lock(event->m);
    event->completed = std::max(event->completed, n);
    event->cv.notify_all();
    return gptoss_status_success;
  });
  return gptoss_status_success;
}

[[maybe_unused]] gptoss_status stream_wait_event(gptoss_backend_stream_t stream, gptoss_backend_event_t ev) {
  Stream* s = stream_of(stream);
  Object* e = find(id(ev), Kind::event);
  if (s == nullptr || e == nullptr) return refuse(gptoss_status_invalid_argument, "stream_wait_event: bad handle");
  std::shared_ptr<Event> event = e->event;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(event->m);
    target = event->recorded;
  }
  s->queue.push("stream_wait_event", [event, target] {
    std::unique_lock<std::mutex> lock(event->m);
    event->cv.wait(lock, [&] { return event->completed >= target; });
    return gptoss_status_success;
  });
  return gptoss_status_success;
}

// ---- buffers ----
gptoss_status buffer_alloc(gptoss_backend_device_t dev, size_t bytes, gptoss_backend_buffer_t* out) {
  if (!allocation_allowed("buffer_alloc")) return gptoss_status_insufficient_resources;
  if (injected_failure("buffer_alloc"))
    return refuse(gptoss_status_insufficient_memory, "out of device memory (injected failure)");
  Device* d = dev_of(dev);
  gptoss_backend_buffer_t inner = nullptr;
  gptoss_status st = g_inner->buffer_alloc(d->inner, bytes, &inner);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(d->inner));
  // Undefined contents made visible: all-ones bytes are NaN as f32 and -1 as int32.
  std::vector<uint8_t> poison(bytes, 0xff);
  st = sync_inner(*d, g_inner->buffer_write(d->inner_stream, inner, 0, poison.data(), bytes));
  if (st != gptoss_status_success) return st;
  *out = as<gptoss_backend_buffer_t>(add({Kind::buffer, d, inner, bytes}));
  return gptoss_status_success;
}

void buffer_free(gptoss_backend_device_t, gptoss_backend_buffer_t buf) {
  Object* o = find(id(buf), Kind::buffer);
  if (o == nullptr) return;
  g_inner->buffer_free(o->dev->inner, static_cast<gptoss_backend_buffer_t>(o->inner));
  erase(id(buf));  // its views now fail every lookup of their parent's memory
}

gptoss_status buffer_view(gptoss_backend_device_t dev, gptoss_backend_buffer_t buf, size_t offset,
                          size_t bytes, gptoss_backend_buffer_t* out) {
  if (offset % 256 != 0) return refuse(gptoss_status_invalid_argument, "buffer_view: offset not a multiple of 256");
  gptoss_backend_buffer_t parent = inner_buffer(buf, offset, bytes, "buffer_view");
  if (parent == nullptr) return gptoss_status_invalid_argument;
  gptoss_backend_buffer_t inner = nullptr;
  const gptoss_status st = g_inner->buffer_view(dev_of(dev)->inner, parent, offset, bytes, &inner);
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(dev_of(dev)->inner));
  *out = as<gptoss_backend_buffer_t>(add({Kind::view, dev_of(dev), inner, bytes}));
  return gptoss_status_success;
}

gptoss_status buffer_write(gptoss_backend_stream_t stream, gptoss_backend_buffer_t buf,
                           size_t offset, const void* host, size_t bytes) {
  Stream* s = stream_of(stream);
  gptoss_backend_buffer_t inner = inner_buffer(buf, offset, bytes, "buffer_write");
  if (s == nullptr || inner == nullptr || (host == nullptr && bytes > 0))
    return gptoss_status_invalid_argument;
  if (s->in_step && !s->calls.empty())
    return refuse(gptoss_status_invalid_argument, "buffer_write after the step's first op");
  auto copy = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(host),
                                                     static_cast<const uint8_t*>(host) + bytes);
  s->queue.push("buffer_write", [s, inner, offset, copy] {
    return g_inner->buffer_write(s->inner, inner, offset, copy->data(), copy->size());
  });
  return gptoss_status_success;
}

gptoss_status buffer_read(gptoss_backend_stream_t stream, gptoss_backend_buffer_t buf,
                          size_t offset, void* host, size_t bytes) {
  Stream* s = stream_of(stream);
  gptoss_backend_buffer_t inner = inner_buffer(buf, offset, bytes, "buffer_read");
  if (s == nullptr || inner == nullptr) return gptoss_status_invalid_argument;
  const gptoss_status st = stream_synchronize(stream);
  if (st != gptoss_status_success) return st;
  return g_inner->buffer_read(s->inner, inner, offset, host, bytes);
}

gptoss_status buffer_copy(gptoss_backend_stream_t stream, gptoss_backend_buffer_t dst,
                          size_t dst_offset, gptoss_backend_buffer_t src, size_t src_offset,
                          size_t bytes) {
  Stream* s = stream_of(stream);
  gptoss_backend_buffer_t d = inner_buffer(dst, dst_offset, bytes, "buffer_copy dst");
  gptoss_backend_buffer_t r = inner_buffer(src, src_offset, bytes, "buffer_copy src");
  if (s == nullptr || d == nullptr || r == nullptr) return gptoss_status_invalid_argument;
  record_call(*s, "buffer_copy " + std::to_string(id(dst)) + "+" + std::to_string(dst_offset) + " " +
                      std::to_string(id(src)) + "+" + std::to_string(src_offset) + " " + std::to_string(bytes));
  s->queue.push("buffer_copy", [s, d, dst_offset, r, src_offset, bytes] {
    return g_inner->buffer_copy(s->inner, d, dst_offset, r, src_offset, bytes);
  });
  return gptoss_status_success;
}

[[maybe_unused]] gptoss_status buffer_copy_peer(gptoss_backend_stream_t stream, gptoss_backend_buffer_t src,
                               size_t src_offset, gptoss_backend_device_t dst_dev,
                               gptoss_backend_buffer_t dst, size_t dst_offset, size_t bytes) {
  Stream* s = stream_of(stream);
  gptoss_backend_buffer_t r = inner_buffer(src, src_offset, bytes, "buffer_copy_peer src");
  gptoss_backend_buffer_t d = inner_buffer(dst, dst_offset, bytes, "buffer_copy_peer dst");
  if (s == nullptr || d == nullptr || r == nullptr) return gptoss_status_invalid_argument;
  gptoss_backend_device_t inner_dst = dev_of(dst_dev)->inner;
  record_call(*s, "buffer_copy_peer " + std::to_string(id(src)) + " " + std::to_string(id(dst)) +
                      " " + std::to_string(bytes));
  s->queue.push("buffer_copy_peer", [s, r, src_offset, inner_dst, d, dst_offset, bytes] {
    return g_inner->buffer_copy_peer(s->inner, r, src_offset, inner_dst, d, dst_offset, bytes);
  });
  return gptoss_status_success;
}

// ---- steps: the replay check ----
[[maybe_unused]] std::string shape_key(const gptoss_step_hints& h) {
  return std::to_string(h.n_tokens) + "/" + std::to_string(h.n_seqs) + "/" +
         std::to_string(h.n_logit_rows) + "/" + std::to_string(h.n_sample_rows);
}

[[maybe_unused]] gptoss_status step_begin(gptoss_backend_stream_t stream, const gptoss_step_hints* hints) {
  Stream* s = stream_of(stream);
  if (s == nullptr || hints == nullptr || s->in_step)
    return refuse(gptoss_status_invalid_argument, "step_begin: bad stream, no hints, or a step already open");
  s->in_step = true;
  s->hints = *hints;
  s->calls.clear();
  return gptoss_status_success;
}

[[maybe_unused]] gptoss_status step_end(gptoss_backend_stream_t stream) {
  Stream* s = stream_of(stream);
  if (s == nullptr || !s->in_step) return refuse(gptoss_status_invalid_argument, "step_end without step_begin");
  s->in_step = false;
  ++g_counters.steps;
  if (s->hints.n_tokens == s->hints.n_seqs) {  // a decode shape: the ABI promises the same calls
    auto& last = s->last_step[shape_key(s->hints)];
    if (!last.empty() && last != s->calls) ++g_counters.replay_mismatches;
    last = s->calls;
  }
  return gptoss_status_success;
}

}  // namespace

void record_call(Stream& s, std::string call) {
  if (s.in_step) s.calls.push_back(std::move(call));
}

gptoss_backend_buffer_t inner_buffer(gptoss_backend_buffer_t h, size_t offset, size_t bytes,
                                     const std::string& what) {
  Object* o = find(id(h), Kind::buffer);
  if (o == nullptr) o = find(id(h), Kind::view);
  if (o == nullptr) {
    set_error(what + ": not a live buffer handle");
    return nullptr;
  }
  if (offset > o->bytes || bytes > o->bytes - offset) {
    set_error(what + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
              " outside a buffer of " + std::to_string(o->bytes));
    return nullptr;
  }
  return static_cast<gptoss_backend_buffer_t>(o->inner);
}

namespace {
gptoss_backend_api make_table() {
  gptoss_backend_api a{};
  a.struct_size = sizeof a;
  a.abi_major = GPTOSS_BACKEND_ABI_MAJOR;
  a.abi_minor = GPTOSS_BACKEND_ABI_MINOR;
  a.flags = GPTOSS_BACKEND_EXPLICIT_ONLY;
  a.device_count = device_count;
  a.device_describe = device_describe;
  a.device_open = device_open;
  a.device_close = device_close;
  a.last_error = last_error;
  a.stream_create = stream_create;
  a.stream_destroy = stream_destroy;
  a.stream_synchronize = stream_synchronize;
  a.buffer_alloc = buffer_alloc;
  a.buffer_free = buffer_free;
  a.buffer_view = buffer_view;
  a.buffer_write = buffer_write;
  a.buffer_read = buffer_read;
  a.buffer_copy = buffer_copy;
#ifdef STRICT_MINIMAL
  a.name = "strict-minimal";
#else
  a.name = "strict";
  a.device_set_precision = device_set_precision;
  a.device_memory_info = device_memory_info;
  a.event_create = event_create;
  a.event_destroy = event_destroy;
  a.event_record = event_record;
  a.stream_wait_event = stream_wait_event;
  a.buffer_copy_peer = buffer_copy_peer;
  a.step_begin = step_begin;
  a.step_end = step_end;
#endif
  fill_op_slots(a);
  fill_memory_slots(a);
  return a;
}
gptoss_backend_api g_table;
}  // namespace
}  // namespace gptoss::strict

extern "C" {

GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) { return 1; }

// Loads the CPU plugin from this plugin's own folder and wraps it.
GPTOSS_PLUGIN_EXPORT gptoss_status gptoss_backend_init(const gptoss_host_api* host,
                                                       const gptoss_backend_api** api_out) {
  using namespace gptoss::strict;
  if (host == nullptr || api_out == nullptr) return gptoss_status_invalid_argument;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&gptoss_backend_init), &info) == 0 || info.dli_fname == nullptr)
    return gptoss_status_unsupported_system;
  const std::string cpu =
      (std::filesystem::path(info.dli_fname).parent_path() / "libgptoss-backend-cpu.so").string();
  void* so = dlopen(cpu.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (so == nullptr) return gptoss_status_unsupported_system;
  auto init = reinterpret_cast<gptoss_backend_init_fn>(dlsym(so, "gptoss_backend_init"));
  if (init == nullptr || init(host, &g_inner) != gptoss_status_success) return gptoss_status_unsupported_system;
  g_table = make_table();
  *api_out = &g_table;
  return gptoss_status_success;
}

}  // extern "C"
