#pragma once
// What the forward steps of one KV pool run on: a stream and an event per model device,
// created with the pool, and per device one step arena — a single buffer carved by
// buffer_view into every activation and per-step input a step needs. The arenas are sized
// for the largest step seen so far (rounded up to powers of two) and reallocated only when a
// step outgrows them, so steps of a known shape allocate nothing.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gptoss/backend.h"

namespace gptoss {

class KvPool;
class Model;

// What a step needs room for.
struct StepShape {
  size_t tokens = 0;
  size_t seqs = 0;
  size_t logit_rows = 0;
  size_t page_entries[2] = {0, 0};  // per page group: the step's page-table entries
};

// One device's regions of its arena; null where the device has no use for one.
struct ArenaViews {
  // Per-step inputs, written by buffer_write at the start of a step.
  gptoss_backend_buffer_t tokens = nullptr, positions = nullptr;
  gptoss_backend_buffer_t slots[2] = {}, seqs[2] = {}, pages[2] = {};
  gptoss_backend_buffer_t sample_rows = nullptr, mask = nullptr;
  // Activations: x residual, h normed, y block output; q, k, v, a attention; router output.
  gptoss_backend_buffer_t x = nullptr, h = nullptr, y = nullptr;
  gptoss_backend_buffer_t q = nullptr, k = nullptr, v = nullptr, a = nullptr;
  gptoss_backend_buffer_t ids = nullptr, gates = nullptr;
  std::vector<gptoss_backend_buffer_t> y_parts;  // expert split, device 0: one per other device
  // Output: rows whose logits are wanted, normed, the logits, sampling results.
  gptoss_backend_buffer_t xr = nullptr, hr = nullptr, logits = nullptr, results = nullptr;
};

class StepRunner {
 public:
  explicit StepRunner(const KvPool& pool);
  ~StepRunner();  // waits for the streams
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  gptoss_backend_stream_t stream(uint32_t device) const { return streams_[device]; }
  // Makes every arena large enough for `need`; reallocates only when it grows.
  void reserve(const StepShape& need);
  const ArenaViews& views(uint32_t device) const { return views_[device]; }
  // bytes from `src` on device `from` to `dst` on device `to`, ordered after what `from` has
  // enqueued and before what `to` enqueues next (peer copy + event, or through host memory).
  void copy(uint32_t from, gptoss_backend_buffer_t src, uint32_t to, gptoss_backend_buffer_t dst,
            size_t bytes);
  // Waits for every stream; throws the first failure (an asynchronous one names its op).
  void synchronize() const;
  // The same after a failure: waits for every stream, discarding what they report.
  void drain() const noexcept;
  // Arena allocations so far (tests: a steady decode makes none).
  size_t arena_allocations() const { return arena_allocations_; }

 private:
  void allocate(const StepShape& caps);
  void release();

  const Model& model_;
  std::vector<gptoss_backend_stream_t> streams_;
  std::vector<gptoss_backend_event_t> events_;  // empty without the event slots
  std::vector<gptoss_backend_buffer_t> arenas_;
  std::vector<ArenaViews> views_;
  StepShape caps_;
  size_t arena_allocations_ = 0;
  std::vector<uint8_t> staging_;  // host copy between devices without buffer_copy_peer
};

}  // namespace gptoss
