#pragma once
// Helpers of the C ABI layer: every exported function body runs inside guard(), which turns
// exceptions into a status and the thread-local last-error message.
#include <atomic>
#include <exception>
#include <new>
#include <string>

#include "gptoss.h"
#include "libgptoss/common/error.hpp"

namespace gptoss::api {

void set_last_error(std::string message);
void clear_last_error();

template <typename F>
gptoss_status guard(F&& body) noexcept {
  try {
    body();
    return gptoss_status_success;
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return gptoss_status_insufficient_memory;
  } catch (const std::exception& e) {
    set_last_error(std::string("internal error: ") + e.what());
    return gptoss_status_internal;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return gptoss_status_internal;
  }
}

template <typename T>
void require(const T* p, const char* what) {
  if (p == nullptr) fail(gptoss_status_invalid_argument, "{} must not be NULL", what);
}

// Base of every handle: an atomic reference count.
struct RefCounted {
  std::atomic<size_t> refs{1};
  virtual ~RefCounted() = default;
};

template <typename H>
gptoss_status retain(H* h) {
  return guard([&] {
    require(h, "handle");
    h->refs.fetch_add(1, std::memory_order_relaxed);
  });
}

template <typename H>
gptoss_status release(H* h) {
  return guard([&] {
    if (h == nullptr) return;
    if (h->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete h;
  });
}

}  // namespace gptoss::api
