// backend-ops cases of sampling on the device (tokens exact, log-probabilities by tolerance,
// masks) and of the buffer slots (views, writes, reads, copies, copies between devices).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tools/conformance/backend_ops_run.hpp"

namespace gptoss::conformance::ops {
namespace {

struct SampleCase {
  size_t rows, vocab;
  float temperature;
  uint32_t top_k;
  float top_p, min_p;
  uint32_t top_n;
  bool mask;
};

Case sample_case(const SampleCase& c, Shapes shapes) {
  return {"sample",
          text("%zu x %zu, t %.1f top_k %u top_p %.2f min_p %.2f top_n %u%s", c.rows, c.vocab, double(c.temperature),
               c.top_k, double(c.top_p), double(c.min_p), c.top_n, c.mask ? ", masked" : ""),
          shapes, [=](Pair& p) {
            Run r(p);
            // Logits with a few clear leaders, so that truncation matters.
            std::vector<float> logits = random_floats(c.rows * c.vocab, uint32_t(c.vocab), -4.0f, 4.0f);
            for (size_t i = 0; i < logits.size(); i += 97) logits[i] += 6.0f;
            std::vector<gptoss_sample_row> rows(c.rows);
            for (size_t i = 0; i < c.rows; ++i)
              rows[i] = {c.temperature, c.top_k, c.top_p, c.min_p, double(i * 0.37 + 0.11) - std::floor(i * 0.37 + 0.11),
                         c.top_n, 0};
            const size_t words = (c.vocab + 31) / 32;
            std::vector<uint32_t> mask(c.rows * words);
            std::mt19937 rng(5);
            for (auto& w : mask) w = rng() & rng();  // a quarter of the tokens allowed
            mask[words - 1] |= 1u << ((c.vocab - 1) % 32);  // the last token allowed (tails)
            const auto L = r.input(logits), R = r.input(rows), M = r.input(mask);
            auto out = r.output(c.rows * sizeof(gptoss_sample_result));
            gptoss_sample_shape shape{};
            shape.struct_size = sizeof shape;
            shape.n_rows = uint32_t(c.rows);
            shape.vocab = uint32_t(c.vocab);
            shape.max_top_k = c.top_k;
            shape.max_top_n = c.top_n;
            shape.all_greedy = c.temperature == 0.0f;
            auto call = [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().sample(d.stream(), L[i], R[i], c.mask ? M[i] : nullptr, &shape, out[i].view), "sample");
            };
            call(0);
            call(1);
            const auto want = r.read<gptoss_sample_result>(0, out[0], "sample");
            const auto got = r.read<gptoss_sample_result>(1, out[1], "sample");
            Result res;
            res.tol = tolerance("sample", p.precision);  // log-probabilities; tokens equal
            for (size_t i = 0; i < c.rows; ++i) {
              const gptoss_sample_result &a = got[i], &b = want[i];
              if (a.token != b.token || a.n_top != b.n_top) {
                res.ok = false;
                res.note = text("row %zu: token %u (reference %u), %u alternatives (%u)", i, a.token, b.token,
                                a.n_top, b.n_top);
                break;
              }
              res.error = std::max(res.error, double(std::fabs(a.logprob - b.logprob)));
              for (uint32_t k = 0; k < b.n_top; ++k) {
                if (a.top[k].token != b.top[k].token) {
                  res.ok = false;
                  res.note = text("row %zu: alternative %u is %u (reference %u)", i, k, a.top[k].token, b.top[k].token);
                }
                res.error = std::max(res.error, double(std::fabs(a.top[k].logprob - b.top[k].logprob)));
              }
            }
            res.ok = res.ok && res.error <= res.tol;
            if (p.perf_reps > 0) res.us = time_calls(r.dev(1), p.perf_reps, [&] { call(1); });
            return res;
          }};
}

// Write, view, copy within a device and read back: bit-exact, nothing outside the targets.
Case buffers_case(size_t bytes) {
  return {"buffers", text("%zu bytes", bytes), Shapes::tails, [=](Pair& p) {
            Run r(p);
            std::vector<uint8_t> host(bytes);
            for (size_t i = 0; i < bytes; ++i) host[i] = uint8_t(i * 131 + 7);
            auto a = r.output(bytes), b = r.output(bytes + 512);
            auto call = [&](int i) {
              Dev& d = r.dev(i);
              d.write(a[size_t(i)].view, host.data(), bytes);
              gptoss_backend_buffer_t inner = nullptr;  // a view of a view, 256 bytes in
              d.check(d.api().buffer_view(d.dev(), b[size_t(i)].view, 256, bytes, &inner), "buffer_view");
              d.check(d.api().buffer_copy(d.stream(), inner, 0, a[size_t(i)].view, 0, bytes), "buffer_copy");
            };
            call(0);
            call(1);
            Result res;
            const auto got = r.read<uint8_t>(1, b[1], "buffer_copy");
            std::vector<uint8_t> mid(got.begin() + 256, got.begin() + 256 + long(bytes));
            res.ok = mid == host && r.read<uint8_t>(1, a[1], "buffer_write") == host;
            if (!res.ok) res.note = "bytes differ after write, view and copy";
            std::vector<uint8_t> partial(bytes / 2 + 1);
            r.dev(1).read(a[1].view, partial.data(), partial.size(), bytes - partial.size());
            if (!std::equal(partial.begin(), partial.end(), host.end() - long(partial.size()))) {
              res.ok = false;
              res.note = "a read at an offset returned other bytes";
            }
            return res;
          }};
}

// Between two devices of the backend under test; skipped with one.
Case peer_case(size_t bytes) {
  return {"buffer_copy_peer", text("%zu bytes, device 0 -> 1", bytes), Shapes::tails, [=](Pair& p) {
            Result res;
            if (p.test2 == nullptr) {
              res.skipped = true;
              res.note = "one device";
              return res;
            }
            Dev& a = p.test;
            Dev& b = *p.test2;
            std::vector<uint8_t> host(bytes);
            for (size_t i = 0; i < bytes; ++i) host[i] = uint8_t(i * 29 + 3);
            const Guarded src = guarded(a, bytes), dst = guarded(b, bytes);
            b.sync();  // the ABI: nothing of the destination device may still use dst
            a.write(src.view, host.data(), bytes);
            a.check(a.api().buffer_copy_peer(a.stream(), src.view, 0, b.dev(), dst.view, 0, bytes), "buffer_copy_peer");
            a.sync();
            res.ok = read_guarded(b, dst, "buffer_copy_peer") == host;
            if (!res.ok) res.note = "bytes differ after the copy";
            a.release();
            b.release();
            return res;
          }};
}

}  // namespace

void misc_cases(std::vector<Case>& c) {
  const Shapes tails = Shapes::tails, real = Shapes::real;
  const SampleCase kinds[] = {
      {3, 33, 0.0f, 0, 1.0f, 0.0f, 3, false},   {3, 1000, 1.0f, 0, 1.0f, 0.0f, 5, false},
      {4, 1000, 0.8f, 40, 1.0f, 0.0f, 2, false}, {2, 1000, 1.0f, 0, 0.9f, 0.0f, 1, false},
      {2, 1000, 1.3f, 0, 1.0f, 0.05f, 0, false}, {5, 1000, 0.7f, 64, 0.95f, 0.02f, 20, true},
      {3, 33, 1.0f, 0, 1.0f, 0.0f, 4, true},    {2, 1000, 0.0f, 0, 1.0f, 0.0f, 20, true},
  };
  for (const SampleCase& k : kinds) c.push_back(sample_case(k, tails));
  c.push_back(sample_case({4, 201088, 0.0f, 0, 1.0f, 0.0f, 5, false}, real));
  c.push_back(sample_case({2, 201088, 1.0f, 0, 0.95f, 0.0f, 5, false}, real));
  c.push_back(sample_case({2, 201088, 0.9f, 50, 1.0f, 0.0f, 0, true}, real));
  for (size_t bytes : {1, 255, 256, 4099}) c.push_back(buffers_case(bytes));
  c.push_back(peer_case(12345));
}

}  // namespace gptoss::conformance::ops
