#pragma once
// One case's state over the reference device (0) and the device under test (1): the same host
// data on both, guarded outputs, the op called on each, outputs read back and compared.
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/conformance/backend_ops.hpp"

namespace gptoss::conformance::ops {

using Buf = gptoss_backend_buffer_t;
using Wt = gptoss_backend_weight_t;

class Run {
 public:
  explicit Run(Pair& p) : p_(p) {}
  ~Run() {
    p_.ref.release();
    p_.test.release();
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  Dev& dev(int i) const { return i == 0 ? p_.ref : p_.test; }
  const Pair& pair() const { return p_; }

  template <typename T>
  std::array<Buf, 2> input(const std::vector<T>& host) {
    std::array<Buf, 2> b{};
    for (int i = 0; i < 2; ++i) {
      b[size_t(i)] = dev(i).alloc(host.size() * sizeof(T));
      dev(i).write(b[size_t(i)], host.data(), host.size() * sizeof(T));
    }
    return b;
  }
  std::array<Guarded, 2> output(size_t bytes) {
    return {guarded(dev(0), bytes), guarded(dev(1), bytes)};
  }
  std::array<Wt, 2> weight(const HostTensor& t) { return {dev(0).upload(t.desc), dev(1).upload(t.desc)}; }

  template <typename T>
  std::vector<T> read(int i, const Guarded& g, const std::string& what) {
    const std::vector<uint8_t> bytes = read_guarded(dev(i), g, what + " on " + (i ? "the tested device" : "the reference"));
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }

  // Calls `call(i)` for the reference then the device under test (times the latter with
  // --perf), then compares the f32 outputs by NMSE against the op's tolerance.
  template <typename F>
  Result finish(const std::string& op, F&& call, std::initializer_list<Guarded> ref_out,
                std::initializer_list<Guarded> test_out) {
    call(0);
    call(1);
    Result r;
    r.tol = tolerance(op, p_.precision);
    auto a = test_out.begin();
    for (const Guarded& g : ref_out) {
      const auto want = read<float>(0, g, op), got = read<float>(1, *a++, op);
      r.error = std::max(r.error, nmse(got, want));
    }
    r.ok = r.error <= r.tol;
    if (p_.perf_reps > 0) r.us = time_calls(dev(1), p_.perf_reps, [&] { call(1); });
    return r;
  }

 private:
  Pair& p_;
};

}  // namespace gptoss::conformance::ops
