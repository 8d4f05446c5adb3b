// backend-ops cases of the router and the MoE block: tails, the 20b layer (32 experts of
// 2880 x 5760 and 2880 x 2880, top 4), and a 120b layer's quarter of 128 experts held as a
// slice (gptoss_tensor_desc::first_expert), routed over all 128.
#include <algorithm>
#include <numeric>

#include "tools/conformance/backend_ops_run.hpp"

namespace gptoss::conformance::ops {
namespace {

Case router_case(size_t T, size_t dim, size_t experts, size_t top_k, Shapes shapes) {
  return {"router", text("t%zu dim %zu, top %zu of %zu", T, dim, top_k, experts), shapes, [=](Pair& p) {
            Run r(p);
            auto w = random_tensor(gptoss_dtype_bf16, {int64_t(experts), int64_t(dim)},
                                   uint32_t(dim + experts), "router", gptoss_tensor_router);
            auto b = random_tensor(gptoss_dtype_bf16, {int64_t(experts)}, uint32_t(experts),
                                   "router bias", gptoss_tensor_router_bias);
            const auto W = r.weight(*w), B = r.weight(*b);
            const auto x = r.input(random_floats(T * dim, uint32_t(T), -2.0f, 2.0f));
            auto ids = r.output(T * top_k * 4), gates = r.output(T * top_k * 4);
            auto call = [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().router(d.stream(), x[i], W[i], B[i], T, dim, experts, top_k, ids[i].view,
                                     gates[i].view),
                      "router");
            };
            Result res = r.finish("router", call, {gates[0]}, {gates[1]});
            const auto want = r.read<int32_t>(0, ids[0], "router ids"), got = r.read<int32_t>(1, ids[1], "router ids");
            if (got != want) {
              res.ok = false;
              res.note = "expert choice differs";
            }
            return res;
          }};
}

struct Moe {
  size_t experts;       // of the layer (ids range over them)
  size_t first, held;   // the slice the weights hold
  size_t dim, inter, top_k, T;
};

Case moe_case(const Moe& m, Shapes shapes) {
  const std::string slice = m.held == m.experts ? "" : text(" (experts %zu..%zu held)", m.first, m.first + m.held - 1);
  return {"moe", text("t%zu, %zu x %zu, top %zu of %zu", m.T, m.dim, m.inter, m.top_k, m.experts) + slice, shapes,
          [=](Pair& p) {
            Run r(p);
            const int64_t E = int64_t(m.held), D = int64_t(m.dim), I = int64_t(m.inter);
            const int32_t first = int32_t(m.first);
            const std::shared_ptr<const HostTensor> t[4] = {
                random_tensor(gptoss_dtype_mxfp4, {E, 2 * I, D}, 1, "mlp1", gptoss_tensor_mlp1,
                              first),
                random_tensor(gptoss_dtype_bf16, {E, 2 * I}, 2, "mlp1 bias",
                              gptoss_tensor_mlp1_bias, first),
                random_tensor(gptoss_dtype_mxfp4, {E, D, I}, 3, "mlp2", gptoss_tensor_mlp2, first),
                random_tensor(gptoss_dtype_bf16, {E, D}, 4, "mlp2 bias", gptoss_tensor_mlp2_bias,
                              first)};
            std::array<Wt, 2> w[4];
            for (int j = 0; j < 4; ++j) w[j] = r.weight(*t[j]);
            // Distinct experts per token, spread so that some tokens share experts, some of
            // the held ones go unused and (for a slice) some chosen ones are not held.
            std::vector<int32_t> ids(m.T * m.top_k);
            std::mt19937 rng(uint32_t(m.T + m.experts));
            std::vector<int32_t> all(m.experts);
            std::iota(all.begin(), all.end(), 0);
            for (size_t t = 0; t < m.T; ++t) {
              std::shuffle(all.begin(), all.end(), rng);
              for (size_t k = 0; k < m.top_k; ++k) ids[t * m.top_k + k] = all[k];
            }
            if (std::find(ids.begin(), ids.begin() + long(m.top_k), int32_t(m.first)) == ids.begin() + long(m.top_k))
              ids[0] = int32_t(m.first);  // at least one held expert
            const auto I_ = r.input(ids);
            const auto G = r.input(random_floats(m.T * m.top_k, 6, 0.05f, 1.0f));
            const auto x = r.input(random_floats(m.T * m.dim, 7, -2.0f, 2.0f));
            auto out = r.output(m.T * m.dim * 4);
            return r.finish("moe", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().moe(d.stream(), x[i], I_[i], G[i], w[0][i], w[1][i], w[2][i], w[3][i], m.T, m.dim,
                                  m.inter, m.top_k, 7.0f, out[i].view),
                      "moe");
            }, {out[0]}, {out[1]});
          }};
}

}  // namespace

void moe_cases(std::vector<Case>& c) {
  const Shapes tails = Shapes::tails, real = Shapes::real;
  for (size_t T : {1, 5, 33}) c.push_back(router_case(T, 96, 8, 3, tails));
  for (size_t experts : {32, 128}) c.push_back(router_case(7, 2880, experts, 4, real));
  for (size_t T : {1, 2, 5, 33}) c.push_back(moe_case({8, 0, 8, 96, 64, 3, T}, tails));
  c.push_back(moe_case({8, 5, 3, 160, 96, 2, 9}, tails));  // a slice
  for (size_t T : {1, 4}) c.push_back(moe_case({32, 0, 32, 2880, 2880, 4, T}, real));
  c.push_back(moe_case({128, 96, 32, 2880, 2880, 4, 3}, real));
}

}  // namespace gptoss::conformance::ops
