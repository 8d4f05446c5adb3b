#pragma once
// CUDA graphs for the decode step. Plugin ABI 2 promises that two steps of the same contexts
// in the same decode shape issue the same op calls with the same handles and sizes (they may
// differ in their buffer_writes, in launch hints no kernel depends on, and in whether the
// sample call has a mask). So the first such step is captured into a graph while it runs, and
// the next ones are replayed with one cudaGraphLaunch: ~300 kernels of a 20b decode step
// without their launch overhead (~1 ms per token at a few microseconds each).
//
// Every op of a step in graph mode arrives as a signature (what identifies the call) and a
// closure that runs it. Capturing: the closures run under stream capture. Replaying: each
// call's signature is checked against the captured step's, in order, and the closures are
// kept but not run; at step_end the graph is launched. If a call differs (or a capture
// fails), the step falls back to running its closures eagerly, and the graph is dropped, to
// be captured again by the next step. Nothing is lost either way.
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "gptoss/backend.h"
#include "gpu_runtime.hpp"

namespace gptoss::cuda {

// What identifies one op call: its kind and its arguments as bits (handles, sizes, and the
// host parameter structs a kernel depends on, never mere hints).
struct OpSignature {
  static constexpr int kWords = 24;
  uint64_t word[kWords] = {};
  int n = 0;
  bool overflow = false;
  template <typename T>
  OpSignature& add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "signatures hold plain values");
    const size_t words = (sizeof(T) + 7) / 8;
    if (n + int(words) > kWords) {
      overflow = true;
      return *this;
    }
    std::memcpy(&word[n], &v, sizeof(T));
    n += int(words);
    return *this;
  }
  // A struct with padding by its fields (its padding bytes are indeterminate).
  OpSignature& add(const gptoss_rope_params& p) {
    return add(p.theta)
        .add(p.scaling_factor)
        .add(p.original_context)
        .add(p.beta_fast)
        .add(p.beta_slow)
        .add(p.truncate);
  }
  bool operator==(const OpSignature& o) const {
    return !overflow && !o.overflow && n == o.n &&
           std::memcmp(word, o.word, sizeof(uint64_t) * size_t(n)) == 0;
  }
};

class StepGraph {
 public:
  using Run = std::function<gptoss_status()>;
  ~StepGraph() { drop(); }

  // step_begin. `replayable`: a decode-shaped step that graphs may cover. `epoch`: the
  // device's count of events that move memory a graph may point into (a KV cache grown, a
  // workspace reallocated, a buffer freed); a graph captured in another epoch is dropped.
  void begin(cudaStream_t stream, bool replayable, uint64_t epoch);
  // An op of the current step (or outside any step: runs at once).
  gptoss_status op(const OpSignature& sig, Run run);
  // step_end: launches the replayed graph, or finishes the capture and launches it.
  gptoss_status end();
  // The captured graph may hold pointers that changed (a KV cache grown, a workspace moved).
  void drop();
  // Whether the current step has issued ops (a buffer_write after them cannot be replayed).
  bool has_ops() const { return in_step_ && !sigs_.empty(); }
  // GPTOSS_CUDA_GRAPHS=0 turns graphs off (and GPTOSS_CUDA_SYNC=1 does, which synchronises).
  static bool enabled();

 private:
  enum class Mode { eager, start_capture, capturing, replaying };
  gptoss_status run_eagerly_from(size_t first);
  void abort_capture();

  cudaStream_t stream_ = nullptr;
  Mode mode_ = Mode::eager;
  bool in_step_ = false;
  std::vector<OpSignature> captured_;  // the graph's calls
  std::vector<OpSignature> sigs_;      // this step's calls
  std::vector<Run> runs_;              // and their closures
  cudaGraphExec_t exec_ = nullptr;
  uint64_t epoch_ = 0;  // of exec_
};

}  // namespace gptoss::cuda
