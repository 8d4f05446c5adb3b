// The strict device's queues, handle table, counters and failure injection.
#include <cstring>
#include <unordered_map>

#include "strict.hpp"

namespace gptoss::strict {

const gptoss_backend_api* g_inner = nullptr;
Counters g_counters;

namespace {
std::mutex g_table_mutex;
std::unordered_map<uint64_t, Object> g_table;
uint64_t g_next = 1;

std::mutex g_fail_mutex;
std::string g_fail_op;
uint32_t g_fail_countdown = 0;

thread_local std::string t_error;
}  // namespace

void set_error(std::string message) { t_error = std::move(message); }
const char* error_message() { return t_error.c_str(); }
gptoss_status refuse(gptoss_status st, std::string message) {
  set_error(std::move(message));
  return st;
}

Queue::Queue() : thread_([this] { loop(); }) {}

Queue::~Queue() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Queue::push(const char* op, std::function<gptoss_status()> fn) {
  {
    std::lock_guard<std::mutex> lock(m_);
    q_.emplace_back(op, std::move(fn));
  }
  cv_.notify_all();
}

void Queue::loop() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
    if (q_.empty()) return;  // stop_
    auto [op, fn] = std::move(q_.front());
    q_.pop_front();
    busy_ = true;
    const bool skip = error_ != gptoss_status_success;
    lock.unlock();
    gptoss_status st = gptoss_status_success;
    std::string why;
    if (!skip) {
      if (injected_failure(op)) {
        st = gptoss_status_internal;
        why = "injected failure (gptoss_strict_fail_op)";
      } else {
        set_error("");
        st = fn();
        if (st != gptoss_status_success)
          why = *error_message() ? error_message() : g_inner->last_error(nullptr);
      }
    }
    lock.lock();
    if (st != gptoss_status_success && error_ == gptoss_status_success) {
      error_ = st;
      message_ = std::string(op) + ": " + why;
    }
    busy_ = false;
    idle_.notify_all();
  }
}

gptoss_status Queue::wait(std::string& message) {
  std::unique_lock<std::mutex> lock(m_);
  idle_.wait(lock, [&] { return q_.empty() && !busy_; });
  const gptoss_status st = error_;
  if (st != gptoss_status_success) message = message_;
  error_ = gptoss_status_success;
  message_.clear();
  return st;
}

uint64_t add(Object o) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  const uint64_t h = (g_next++ << 4) | uint64_t(o.kind);
  g_table.emplace(h, std::move(o));
  return h;
}

Object* find(uint64_t handle, Kind kind) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  if ((handle & 15u) != uint64_t(kind)) return nullptr;
  auto it = g_table.find(handle);
  return it == g_table.end() ? nullptr : &it->second;  // nodes are stable
}

void erase(uint64_t handle) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_table.erase(handle);
}

Device* dev_of(gptoss_backend_device_t d) { return reinterpret_cast<Device*>(d); }

Stream* stream_of(gptoss_backend_stream_t s) {
  Object* o = find(id(s), Kind::stream);
  return o ? o->stream.get() : nullptr;
}

bool allocation_allowed(const char* what) {
  if (!g_counters.armed) {
    ++g_counters.allocations;
    return true;
  }
  set_error(std::string(what) + " while the strict device is armed (an allocation after warm-up)");
  return false;
}

gptoss_status sync_inner(Device& d, gptoss_status st) {
  if (st != gptoss_status_success) return refuse(st, g_inner->last_error(d.inner));
  return g_inner->stream_synchronize(d.inner_stream);
}

bool injected_failure(const char* op) {
  std::lock_guard<std::mutex> lock(g_fail_mutex);
  if (g_fail_countdown == 0 || g_fail_op != op) return false;
  return --g_fail_countdown == 0;
}

}  // namespace gptoss::strict

using namespace gptoss::strict;

extern "C" {

GPTOSS_PLUGIN_EXPORT void gptoss_strict_arm(int armed) { g_counters.armed = armed != 0; }

GPTOSS_PLUGIN_EXPORT void gptoss_strict_get_counters(struct gptoss_strict_counters* out) {
  out->allocations = g_counters.allocations;
  out->kv_growths = g_counters.kv_growths;
  out->steps = g_counters.steps;
  out->replay_mismatches = g_counters.replay_mismatches;
}

GPTOSS_PLUGIN_EXPORT void gptoss_strict_fail_op(const char* op, uint32_t nth) {
  std::lock_guard<std::mutex> lock(g_fail_mutex);
  g_fail_op = op ? op : "";
  g_fail_countdown = op ? nth : 0;
}

}  // extern "C"
