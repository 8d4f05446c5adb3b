#include "step_graph.hpp"

#include <cstdlib>

#include "cuda_backend.hpp"

namespace gptoss::cuda {

bool StepGraph::enabled() {
  static const bool on = [] {
    auto set = [](const char* name) {
      const char* v = std::getenv(name);
      return v != nullptr ? (*v != '\0' && std::strcmp(v, "0") != 0 ? 1 : 0) : -1;
    };
    return set("GPTOSS_CUDA_GRAPHS") != 0 && set("GPTOSS_CUDA_SYNC") != 1;
  }();
  return on;
}

void StepGraph::begin(cudaStream_t stream, bool replayable, uint64_t epoch) {
  if (stream_ != stream || epoch_ != epoch) drop();
  stream_ = stream;
  epoch_ = epoch;
  in_step_ = true;
  sigs_.clear();
  runs_.clear();
  if (!replayable || !enabled())
    mode_ = Mode::eager;
  else
    mode_ = exec_ != nullptr ? Mode::replaying : Mode::start_capture;
}

void StepGraph::drop() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
  captured_.clear();
}

void StepGraph::abort_capture() {
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(stream_, &g);
  if (g != nullptr) cudaGraphDestroy(g);
  cudaGetLastError();  // a failed capture leaves its error behind
}

gptoss_status StepGraph::run_eagerly_from(size_t first) {
  mode_ = Mode::eager;
  for (size_t i = first; i < runs_.size(); ++i)
    if (gptoss_status st = runs_[i](); st != gptoss_status_success) return st;
  return gptoss_status_success;
}

gptoss_status StepGraph::op(const OpSignature& sig, Run run) {
  if (!in_step_ || mode_ == Mode::eager) return run();
  sigs_.push_back(sig);
  runs_.push_back(std::move(run));
  if (mode_ == Mode::replaying) {
    const size_t i = sigs_.size() - 1;
    if (i < captured_.size() && captured_[i] == sig) return gptoss_status_success;  // replayed at step_end
    drop();  // a different step: run it as it comes, capture again next time
    return run_eagerly_from(0);
  }
  if (mode_ == Mode::start_capture) {
    if (sig.overflow || cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return run_eagerly_from(0);
    }
    mode_ = Mode::capturing;
  }
  // Capturing. An op that fails now may have failed only because of the capture (e.g. a
  // workspace that had to grow): nothing captured has run yet, so run it all eagerly.
  if (runs_.back()() == gptoss_status_success && !sig.overflow) return gptoss_status_success;
  abort_capture();
  return run_eagerly_from(0);
}

gptoss_status StepGraph::end() {
  in_step_ = false;
  if (mode_ == Mode::capturing) {
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamEndCapture(stream_, &g);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec_, g, 0);
    if (g != nullptr) cudaGraphDestroy(g);
    if (e != cudaSuccess) {
      cudaGetLastError();
      exec_ = nullptr;
      return run_eagerly_from(0);
    }
    captured_ = sigs_;
  } else if (mode_ == Mode::replaying && sigs_.size() != captured_.size()) {
    drop();
    return run_eagerly_from(0);
  } else if (mode_ != Mode::replaying) {
    return gptoss_status_success;  // eager, or a step without ops
  }
  mode_ = Mode::eager;
  const cudaError_t e = cudaGraphLaunch(exec_, stream_);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "decode step (CUDA graph launch)");
}

}  // namespace gptoss::cuda
