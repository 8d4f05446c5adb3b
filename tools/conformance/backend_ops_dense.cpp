// backend-ops cases of the dense and elementwise slots: embedding, rmsnorm, linear (every weight
// dtype), rope, add, and the fused linear_qkv and add_rmsnorm against their compositions on
// the reference.
#include <cstdio>

#include "tools/conformance/backend_ops_run.hpp"

namespace gptoss::conformance::ops {
namespace {

const char* dtype_name(gptoss_dtype d) {
  switch (d) {
    case gptoss_dtype_f32: return "f32";
    case gptoss_dtype_bf16: return "bf16";
    case gptoss_dtype_f16: return "f16";
    case gptoss_dtype_q8_0: return "q8_0";
    case gptoss_dtype_mxfp4: return "mxfp4";
  }
  return "?";
}

Case embedding_case(size_t rows, size_t cols, size_t T, Shapes shapes) {
  return {"embedding", text("bf16 [%zu, %zu] t%zu", rows, cols, T), shapes, [=](Pair& p) {
            Run r(p);
            auto w = random_tensor(gptoss_dtype_bf16, {int64_t(rows), int64_t(cols)},
                                   uint32_t(rows + T), "embedding", gptoss_tensor_embedding);
            const auto W = r.weight(*w);
            std::vector<int32_t> ids(T);
            for (size_t t = 0; t < T; ++t) ids[t] = int32_t((t * 7919 + rows - 1) % rows);  // the last row too
            ids[0] = int32_t(rows - 1);
            const auto tok = r.input(ids);
            auto out = r.output(T * cols * 4);
            return r.finish("embedding", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().embedding(d.stream(), W[i], tok[i], T, out[i].view), "embedding");
            }, {out[0]}, {out[1]});
          }};
}

Case rmsnorm_case(size_t T, size_t dim, gptoss_dtype scale_dtype, Shapes shapes) {
  return {"rmsnorm", text("t%zu dim %zu, %s scale", T, dim, dtype_name(scale_dtype)), shapes, [=](Pair& p) {
            Run r(p);
            auto g = random_tensor(scale_dtype, {int64_t(dim)}, uint32_t(dim), "scale",
                                   gptoss_tensor_attn_norm);
            const auto G = r.weight(*g);
            const auto x = r.input(random_floats(T * dim, uint32_t(T + dim), -4.0f, 4.0f));
            auto out = r.output(T * dim * 4);
            return r.finish("rmsnorm", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().rmsnorm(d.stream(), x[i], G[i], T, dim, 1e-5f, out[i].view), "rmsnorm");
            }, {out[0]}, {out[1]});
          }};
}

Case linear_case(gptoss_dtype dt, size_t T, size_t n_in, size_t n_out, bool bias, Shapes shapes) {
  return {"linear", text("%s t%zu %zu->%zu%s", dtype_name(dt), T, n_in, n_out, bias ? " bias" : ""), shapes, [=](Pair& p) {
            Run r(p);
            auto w = random_tensor(dt, {int64_t(n_out), int64_t(n_in)}, uint32_t(n_in * 3 + n_out),
                                   "w", gptoss_tensor_attn_q);
            auto b = random_tensor(gptoss_dtype_bf16, {int64_t(n_out)}, uint32_t(n_out + 1), "b",
                                   gptoss_tensor_attn_q_bias);
            const auto W = r.weight(*w);
            const auto B = bias ? r.weight(*b) : std::array<Wt, 2>{};
            const auto x = r.input(random_floats(T * n_in, uint32_t(T * 5 + n_in), -2.0f, 2.0f));
            auto out = r.output(T * n_out * 4);
            return r.finish("linear", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().linear(d.stream(), x[i], W[i], B[i], T, n_in, n_out, out[i].view), "linear");
            }, {out[0]}, {out[1]});
          }};
}

// YaRN as gpt-oss configures it; positions from 0 to the longest context.
gptoss_rope_params yarn() { return {150000.0, 32.0, 4096.0, 32.0, 1.0, 0}; }

Case rope_case(size_t T, size_t heads, size_t hd, Shapes shapes) {
  return {"rope", text("t%zu heads %zu dim %zu", T, heads, hd), shapes, [=](Pair& p) {
            Run r(p);
            std::vector<int32_t> pos(T);
            for (size_t t = 0; t < T; ++t) pos[t] = int32_t((t * 40961 + 7) % 131072);
            pos[T - 1] = 131071;
            const auto P = r.input(pos);
            auto x = r.output(T * heads * hd * 4);  // in place: starts as the input
            const auto in = random_floats(T * heads * hd, uint32_t(T + heads), -3.0f, 3.0f);
            for (int i = 0; i < 2; ++i) r.dev(i).write(x[size_t(i)].view, in.data(), in.size() * 4);
            const gptoss_rope_params rp = yarn();
            return r.finish("rope", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().rope(d.stream(), x[i].view, P[i], T, heads, hd, &rp), "rope");
            }, {x[0]}, {x[1]});
          }};
}

Case add_case(size_t n, Shapes shapes) {
  return {"add", text("n %zu", n), shapes, [=](Pair& p) {
            Run r(p);
            auto x = r.output(n * 4);
            const auto in = random_floats(n, uint32_t(n));
            for (int i = 0; i < 2; ++i) r.dev(i).write(x[size_t(i)].view, in.data(), n * 4);
            const auto y = r.input(random_floats(n, uint32_t(n + 1)));
            return r.finish("add", [&](int i) {
              Dev& d = r.dev(i);
              d.check(d.api().add(d.stream(), x[i].view, y[i], n), "add");
            }, {x[0]}, {x[1]});
          }};
}

// Fused slots: the device under test's fused call against the reference's composition.
Case qkv_case(size_t T, size_t n_in, size_t q_dim, size_t kv_dim, Shapes shapes) {
  return {"linear_qkv", text("bf16 t%zu %zu->%zu+%zu+%zu", T, n_in, q_dim, kv_dim, kv_dim), shapes, [=](Pair& p) {
            Run r(p);
            std::shared_ptr<const HostTensor> t[6];
            const size_t rows[3] = {q_dim, kv_dim, kv_dim};
            for (int j = 0; j < 3; ++j) {
              t[2 * j] = random_tensor(gptoss_dtype_bf16, {int64_t(rows[j]), int64_t(n_in)},
                                       uint32_t(10 + j), "w", gptoss_tensor_attn_q);
              t[2 * j + 1] = random_tensor(gptoss_dtype_bf16, {int64_t(rows[j])}, uint32_t(20 + j),
                                           "b", gptoss_tensor_attn_q_bias);
            }
            std::array<Wt, 2> w[6];
            for (int j = 0; j < 6; ++j) w[j] = r.weight(*t[j]);
            const auto x = r.input(random_floats(T * n_in, uint32_t(T), -2.0f, 2.0f));
            auto q = r.output(T * q_dim * 4), k = r.output(T * kv_dim * 4), v = r.output(T * kv_dim * 4);
            return r.finish("linear_qkv", [&](int i) {
              Dev& d = r.dev(i);
              if (i == 0) {  // the reference composition
                d.check(d.api().linear(d.stream(), x[0], w[0][0], w[1][0], T, n_in, q_dim, q[0].view), "linear q");
                d.check(d.api().linear(d.stream(), x[0], w[2][0], w[3][0], T, n_in, kv_dim, k[0].view), "linear k");
                d.check(d.api().linear(d.stream(), x[0], w[4][0], w[5][0], T, n_in, kv_dim, v[0].view), "linear v");
                return;
              }
              d.check(d.api().linear_qkv(d.stream(), x[1], w[0][1], w[1][1], w[2][1], w[3][1], w[4][1], w[5][1],
                                         T, n_in, q_dim, kv_dim, q[1].view, k[1].view, v[1].view),
                      "linear_qkv");
            }, {q[0], k[0], v[0]}, {q[1], k[1], v[1]});
          }};
}

Case add_rmsnorm_case(size_t T, size_t dim, Shapes shapes) {
  return {"add_rmsnorm", text("t%zu dim %zu", T, dim), shapes, [=](Pair& p) {
            Run r(p);
            auto g = random_tensor(gptoss_dtype_bf16, {int64_t(dim)}, uint32_t(dim), "scale",
                                   gptoss_tensor_attn_norm);
            const auto G = r.weight(*g);
            auto x = r.output(T * dim * 4), out = r.output(T * dim * 4);
            const auto in = random_floats(T * dim, uint32_t(T + 3), -4.0f, 4.0f);
            for (int i = 0; i < 2; ++i) r.dev(i).write(x[size_t(i)].view, in.data(), in.size() * 4);
            const auto y = r.input(random_floats(T * dim, uint32_t(T + 4), -4.0f, 4.0f));
            return r.finish("add_rmsnorm", [&](int i) {
              Dev& d = r.dev(i);
              if (i == 0) {
                d.check(d.api().add(d.stream(), x[0].view, y[0], T * dim), "add");
                d.check(d.api().rmsnorm(d.stream(), x[0].view, G[0], T, dim, 1e-5f, out[0].view), "rmsnorm");
                return;
              }
              d.check(d.api().add_rmsnorm(d.stream(), x[1].view, y[1], G[1], T, dim, 1e-5f, out[1].view),
                      "add_rmsnorm");
            }, {x[0], out[0]}, {x[1], out[1]});
          }};
}

}  // namespace

void dense_cases(std::vector<Case>& c) {
  const Shapes tails = Shapes::tails, real = Shapes::real;
  for (size_t T : {1, 3, 17}) c.push_back(embedding_case(1000, 64, T, tails));
  c.push_back(embedding_case(4096, 2880, 5, real));
  c.push_back(embedding_case(201088, 2880, 5, Shapes::big));
  for (size_t dim : {1, 31, 64, 100}) c.push_back(rmsnorm_case(3, dim, gptoss_dtype_f32, tails));
  for (gptoss_dtype dt : {gptoss_dtype_bf16, gptoss_dtype_f32})
    for (size_t T : {1, 7}) c.push_back(rmsnorm_case(T, 2880, dt, real));
  for (gptoss_dtype dt : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16, gptoss_dtype_q8_0, gptoss_dtype_mxfp4})
    for (size_t T : {1, 3, 17, 64}) {
      c.push_back(linear_case(dt, T, 32, 1, false, tails));
      c.push_back(linear_case(dt, T, 160, 77, true, tails));
    }
  for (size_t T : {1, 5}) {
    c.push_back(linear_case(gptoss_dtype_bf16, T, 2880, 4096, true, real));   // q
    c.push_back(linear_case(gptoss_dtype_bf16, T, 2880, 512, true, real));    // k, v
    c.push_back(linear_case(gptoss_dtype_bf16, T, 4096, 2880, true, real));   // o
    c.push_back(linear_case(gptoss_dtype_mxfp4, T, 2880, 5760, true, real));  // an expert's mlp1
  }
  c.push_back(linear_case(gptoss_dtype_bf16, 1, 2880, 201088, false, Shapes::big));  // unembedding
  for (size_t T : {1, 4}) c.push_back(rope_case(T, 3, 32, tails));
  c.push_back(rope_case(2, 1, 100, tails));
  c.push_back(rope_case(3, 64, 64, real));
  c.push_back(rope_case(3, 8, 64, real));
  for (size_t n : {1, 33, 1000}) c.push_back(add_case(n, tails));
  c.push_back(add_case(7 * 2880, real));
  c.push_back(qkv_case(3, 96, 64, 32, tails));
  for (size_t T : {1, 5}) c.push_back(qkv_case(T, 2880, 4096, 512, real));
  c.push_back(add_rmsnorm_case(5, 100, tails));
  for (size_t T : {1, 7}) c.push_back(add_rmsnorm_case(T, 2880, real));
}

}  // namespace gptoss::conformance::ops
