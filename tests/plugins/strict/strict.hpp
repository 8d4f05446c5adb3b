#pragma once
// The strict test device: a backend plugin that wraps the CPU plugin (loaded from beside
// itself, driven only through its gptoss_backend_api table) with the semantics of a real
// accelerator, so that the core's use of the ABI is checked before a GPU exists:
//  - handles are numbers, not pointers: the core cannot dereference or offset them;
//  - every op runs later, on a worker thread of its stream, in order; host data an op needs
//    is copied at the call; failures are reported at the next synchronising call;
//  - new buffers and KV pages are filled with NaN: reading what was never written shows;
//  - sizes are checked at every call against the buffers given (a view too small is an
//    error, not an overrun);
//  - allocation can be armed to fail (gptoss_strict_arm): the hot path must allocate nothing;
//  - weight uploads are asynchronous until weights_end;
//  - decode steps of one shape are compared call by call (step_begin/step_end), counting
//    steps that differ in what the ABI promises stays the same.
// Built twice: "strict" (every optional slot) and "strict-minimal" (required slots only), so
// the core's fallbacks run too. Both are GPTOSS_BACKEND_EXPLICIT_ONLY: never chosen by auto.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gptoss/backend.h"

namespace gptoss::strict {

extern const gptoss_backend_api* g_inner;  // the CPU plugin's table

// An in-order queue of work run by one thread: a stream.
class Queue {
 public:
  Queue();
  ~Queue();
  void push(const char* op, std::function<gptoss_status()> fn);
  // Waits for everything pushed; returns the first failure since the last wait (its message
  // names the op) and forgets it. Work after a failure is skipped until then.
  gptoss_status wait(std::string& message);

 private:
  void loop();
  std::mutex m_;
  std::condition_variable cv_, idle_;
  std::deque<std::pair<const char*, std::function<gptoss_status()>>> q_;
  bool busy_ = false, stop_ = false;
  gptoss_status error_ = gptoss_status_success;
  std::string message_;
  std::thread thread_;
};

struct Device {
  int32_t index;
  gptoss_backend_device_t inner;
  gptoss_backend_stream_t inner_stream;  // for the device's own synchronous work
  Queue uploads;                         // asynchronous weight uploads
  std::vector<std::vector<uint8_t>> staged;  // host copies of non-persistent tensors in flight
};

enum class Kind : uint32_t { buffer = 1, view = 2, weight = 3, kv = 4, stream = 5, event = 6 };

struct Event {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;
};

struct Stream {
  Device* dev;
  gptoss_backend_stream_t inner;
  Queue queue;
  // Replay check: the calls of the step in progress, and per decode shape the last step's.
  bool in_step = false;
  gptoss_step_hints hints{};
  std::vector<std::string> calls;
  std::map<std::string, std::vector<std::string>> last_step;
};

struct Object {
  Object(Kind k, Device* d, void* in = nullptr, size_t n = 0) : kind(k), dev(d), inner(in), bytes(n) {}
  Kind kind;
  Device* dev;
  void* inner;     // the CPU plugin's handle (buffer, view, weight or kv)
  size_t bytes;    // buffers and views
  uint32_t ndim = 0;               // weight: its shape
  int64_t shape[4] = {};
  gptoss_kv_desc kv{};            // kv
  size_t kv_pages = 0;
  std::shared_ptr<Stream> stream;  // stream
  std::shared_ptr<Event> event;    // event
};

// The handle table: numbers with the kind in the low bits.
uint64_t add(Object o);
// The object of `handle` if it is live and of `kind`, else nullptr.
Object* find(uint64_t handle, Kind kind);
void erase(uint64_t handle);
template <typename H>
uint64_t id(H h) { return uint64_t(reinterpret_cast<uintptr_t>(h)); }
template <typename H>
H as(uint64_t id) { return reinterpret_cast<H>(uintptr_t(id)); }

// Counters and switches for the tests (exported below as C functions).
struct Counters {
  std::atomic<uint64_t> allocations{0};  // buffers, streams, events, KV caches
  std::atomic<uint64_t> kv_growths{0};
  std::atomic<uint64_t> steps{0};
  std::atomic<uint64_t> replay_mismatches{0};
  std::atomic<bool> armed{false};
};
extern Counters g_counters;
// Whether the next run of `op` is the one the test asked to fail (gptoss_strict_fail_op).
bool injected_failure(const char* op);

void set_error(std::string message);
const char* error_message();  // the calling thread's last failure
gptoss_status refuse(gptoss_status st, std::string message);

// The op slots (strict_ops.cpp) and the weight and KV slots (strict_memory.cpp).
void fill_op_slots(gptoss_backend_api& api);
void fill_memory_slots(gptoss_backend_api& api);
Device* dev_of(gptoss_backend_device_t d);
Stream* stream_of(gptoss_backend_stream_t s);
// Counts an allocation, or refuses it (error set) while the device is armed.
bool allocation_allowed(const char* what);
// Waits for the device's own inner stream after `st` (its inner work), or reports `st`.
gptoss_status sync_inner(Device& d, gptoss_status st);
// The inner handle of buffer or view `h` if it holds at least `bytes` bytes from `offset`;
// else sets the error naming `what` and returns nullptr.
gptoss_backend_buffer_t inner_buffer(gptoss_backend_buffer_t h, size_t offset, size_t bytes,
                                     const std::string& what);
// The calls of a step, for the replay check (only between step_begin and step_end).
void record_call(Stream& s, std::string call);

}  // namespace gptoss::strict

extern "C" {
struct gptoss_strict_counters {
  uint64_t allocations, kv_growths, steps, replay_mismatches;
};
// Armed: every allocation (buffer, stream, event, KV cache) fails with insufficient_resources.
GPTOSS_PLUGIN_EXPORT void gptoss_strict_arm(int armed);
GPTOSS_PLUGIN_EXPORT void gptoss_strict_get_counters(struct gptoss_strict_counters* out);
// The nth (1 = next) run of op `op` (slot name, e.g. "moe") fails asynchronously with
// gptoss_status_internal ("buffer_alloc": that call fails with insufficient_memory); NULL
// cancels.
GPTOSS_PLUGIN_EXPORT void gptoss_strict_fail_op(const char* op, uint32_t nth);
}
