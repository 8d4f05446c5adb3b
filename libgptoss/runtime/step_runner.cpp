#include "libgptoss/runtime/step_runner.hpp"

#include <algorithm>
#include <bit>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/kvcache.hpp"

namespace gptoss {

namespace {
constexpr size_t kAlign = 256;  // buffer_view offsets

size_t round_up_pow2(size_t n, size_t at_least) { return std::bit_ceil(std::max(n, at_least)); }

// Lays regions out one after another (256-byte aligned), first to measure, then to carve.
class Carver {
 public:
  Carver(const BackendDevice* dev, gptoss_backend_buffer_t arena) : dev_(dev), arena_(arena) {}
  gptoss_backend_buffer_t take(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t at = offset_;
    offset_ += (bytes + kAlign - 1) / kAlign * kAlign;
    return arena_ ? dev_->view(arena_, at, bytes) : nullptr;
  }
  size_t size() const { return std::max<size_t>(offset_, kAlign); }

 private:
  const BackendDevice* dev_;
  gptoss_backend_buffer_t arena_;
  size_t offset_ = 0;
};

// The regions of device d for a step of shape `s` (see ArenaViews).
ArenaViews carve(const Model& m, uint32_t d, const StepShape& s, Carver& c) {
  const ModelConfig& cfg = m.config();
  const Placement& p = m.placement();
  const size_t T = s.tokens, H = cfg.hidden_size, R = s.logit_rows, K = cfg.experts_per_token;
  const size_t q_dim = size_t(cfg.num_heads) * cfg.head_dim;
  const size_t kv_dim = size_t(cfg.num_kv_heads) * cfg.head_dim;
  const bool attention = std::find(p.layer_device.begin(), p.layer_device.end(), d) != p.layer_device.end();
  const bool output = d == p.output_device();
  ArenaViews v;
  if (d == 0) v.tokens = c.take(T * 4);
  if (attention) {
    v.positions = c.take(T * 4);
    for (int g = 0; g < 2; ++g) {
      v.slots[g] = c.take(T * 4);
      v.seqs[g] = c.take(s.seqs * sizeof(gptoss_attn_seq));
      v.pages[g] = c.take(s.page_entries[g] * 4);
    }
    v.q = c.take(T * q_dim * 4);
    v.k = c.take(T * kv_dim * 4);
    v.v = c.take(T * kv_dim * 4);
    v.a = c.take(T * q_dim * 4);
  }
  v.x = c.take(T * H * 4);
  v.h = c.take(T * H * 4);
  v.y = c.take(T * H * 4);
  v.ids = c.take(T * K * 4);
  v.gates = c.take(T * K * 4);
  if (d == 0 && p.experts_split())
    for (uint32_t o = 1; o < p.n_devices; ++o) v.y_parts.push_back(c.take(T * H * 4));
  if (output) {
    v.sample_rows = c.take(R * sizeof(gptoss_sample_row));
    v.mask = c.take(R * ((size_t(cfg.vocab_size) + 31) / 32) * 4);
    v.xr = c.take(R * H * 4);
    v.hr = c.take(R * H * 4);
    v.logits = c.take(R * size_t(cfg.vocab_size) * 4);
    v.results = c.take(R * sizeof(gptoss_sample_result));
  }
  return v;
}
}  // namespace

StepRunner::StepRunner(const KvPool& pool) : model_(pool.model()) {
  const uint32_t n = model_.num_devices();
  try {
    for (uint32_t d = 0; d < n; ++d) streams_.push_back(model_.device(d).create_stream());
    const gptoss_backend_api& api = model_.api();
    if (n > 1 && GPTOSS_HAS_SLOT(&api, event_create))
      for (uint32_t d = 0; d < n; ++d) {
        gptoss_backend_event_t ev = nullptr;
        model_.device(d).check(api.event_create(model_.device(d).dev(), &ev), "event creation");
        events_.push_back(ev);
      }
  } catch (...) {
    release();
    throw;
  }
  arenas_.assign(n, nullptr);
  views_.assign(n, {});
}

StepRunner::~StepRunner() { release(); }

void StepRunner::release() {
  drain();
  for (size_t d = 0; d < arenas_.size(); ++d) model_.device(uint32_t(d)).free(arenas_[d]);
  arenas_.clear();
  for (size_t d = 0; d < events_.size(); ++d)
    model_.api().event_destroy(model_.device(uint32_t(d)).dev(), events_[d]);
  events_.clear();
  for (size_t d = 0; d < streams_.size(); ++d) model_.device(uint32_t(d)).destroy_stream(streams_[d]);
  streams_.clear();
}

void StepRunner::reserve(const StepShape& need) {
  bool fits = need.tokens <= caps_.tokens && need.seqs <= caps_.seqs &&
              need.logit_rows <= caps_.logit_rows;
  for (int g = 0; g < 2; ++g) fits = fits && need.page_entries[g] <= caps_.page_entries[g];
  if (fits && arena_allocations_ > 0) return;
  StepShape caps;
  caps.tokens = round_up_pow2(std::max(need.tokens, caps_.tokens), 16);
  caps.seqs = round_up_pow2(std::max(need.seqs, caps_.seqs), 1);
  caps.logit_rows = round_up_pow2(std::max(need.logit_rows, caps_.logit_rows), 1);
  for (int g = 0; g < 2; ++g)
    caps.page_entries[g] = round_up_pow2(std::max(need.page_entries[g], caps_.page_entries[g]), 64);
  synchronize();  // the old arenas may still be read by the last step's ops
  allocate(caps);
}

void StepRunner::allocate(const StepShape& caps) {
  for (uint32_t d = 0; d < arenas_.size(); ++d) {
    const BackendDevice& dev = model_.device(d);
    dev.free(arenas_[d]);
    arenas_[d] = nullptr;
    views_[d] = {};
  }
  caps_ = {};
  for (uint32_t d = 0; d < arenas_.size(); ++d) {
    const BackendDevice& dev = model_.device(d);
    Carver measure(&dev, nullptr);
    carve(model_, d, caps, measure);
    arenas_[d] = dev.alloc(measure.size(), "step arena allocation");
    Carver cut(&dev, arenas_[d]);
    views_[d] = carve(model_, d, caps, cut);
    ++arena_allocations_;
  }
  caps_ = caps;
}

void StepRunner::copy(uint32_t from, gptoss_backend_buffer_t src, uint32_t to,
                      gptoss_backend_buffer_t dst, size_t bytes) {
  const gptoss_backend_api& api = model_.api();
  const BackendDevice& a = model_.device(from);
  const BackendDevice& b = model_.device(to);
  if (GPTOSS_HAS_SLOT(&api, buffer_copy_peer)) {
    a.check(api.buffer_copy_peer(streams_[from], src, 0, b.dev(), dst, 0, bytes),
            "copy to another device");
    if (!events_.empty()) {
      a.check(api.event_record(streams_[from], events_[from]), "event record");
      b.check(api.stream_wait_event(streams_[to], events_[from]), "stream wait");
    } else {
      a.check(api.stream_synchronize(streams_[from]), "stream synchronize");
    }
    return;
  }
  staging_.resize(std::max(staging_.size(), bytes));
  a.check(api.buffer_read(streams_[from], src, 0, staging_.data(), bytes), "read for another device");
  b.check(api.buffer_write(streams_[to], dst, 0, staging_.data(), bytes), "write from another device");
}

void StepRunner::drain() const noexcept {
  for (gptoss_backend_stream_t s : streams_) (void)model_.api().stream_synchronize(s);
}

void StepRunner::synchronize() const {
  // Every stream is waited for even after a failure, so nothing of this step still runs.
  std::exception_ptr first;
  for (uint32_t d = 0; d < streams_.size(); ++d) {
    try {
      model_.device(d).check(model_.api().stream_synchronize(streams_[d]), "stream synchronize");
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace gptoss
