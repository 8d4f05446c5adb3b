// backend-ops cases of the KV cache and attention: kv_write then attention over scattered
// pages (released pages marked -1 where a sliding window no longer reaches), sequences batched
// in one call, GQA, f32 and bf16 caches, two layers in one cache; the fused rope_kv_write
// against rope + rope + kv_write; kv_grow keeping what the pages held.
#include <algorithm>
#include <numeric>

#include "tools/conformance/backend_ops_run.hpp"

namespace gptoss::conformance::ops {
namespace {

constexpr size_t kPage = 16;

struct Seq {
  size_t ctx;  // positions in the cache after the call: [0, ctx)
  size_t nq;   // query rows: its last nq positions
};

struct Attn {
  size_t n_heads, n_kv, hd;
  gptoss_kv_dtype dtype;
  uint32_t window;
  std::vector<Seq> seqs;

  size_t kv_dim() const { return n_kv * hd; }
  size_t tokens() const {
    size_t t = 0;
    for (const Seq& s : seqs) t += s.nq;
    return t;
  }
  std::string describe() const {
    std::string s = text("%zu/%zu heads x %zu, %s%s", n_heads, n_kv, hd,
                         dtype == gptoss_kv_dtype_f32 ? "f32" : "bf16",
                         window ? text(", window %u", window).c_str() : "");
    for (const Seq& q : seqs) s += text(", ctx %zu q %zu", q.ctx, q.nq);
    return s;
  }
};

// Page tables, slots and data of one case (the same on both devices).
struct Layout {
  std::vector<int32_t> page_table;         // -1: released (wholly before every query's window)
  std::vector<gptoss_attn_seq> seqs;
  std::vector<int32_t> slots;              // of every held position, sequence by sequence
  std::vector<int32_t> positions;          // of the query rows
  std::vector<int32_t> query_slots;        // of the query rows
  size_t pages = 0;
  gptoss_attn_shape shape{};
};

Layout layout(const Attn& a, uint32_t seed) {
  Layout l;
  for (const Seq& s : a.seqs) l.pages += (s.ctx + kPage - 1) / kPage;
  std::vector<int32_t> perm(l.pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  size_t next = 0, row = 0, max_keys = 0, max_q = 0;
  for (const Seq& s : a.seqs) {
    const size_t offset = l.page_table.size(), first_q = s.ctx - s.nq;
    const size_t first_key = a.window && first_q + 1 > a.window ? first_q + 1 - a.window : 0;
    for (size_t p = 0; p < (s.ctx + kPage - 1) / kPage; ++p)
      l.page_table.push_back((p + 1) * kPage <= first_key ? -1 : perm[next++]);
    for (size_t pos = 0; pos < s.ctx; ++pos) {
      const int32_t page = l.page_table[offset + pos / kPage];
      if (page < 0) continue;
      const int32_t slot = page * int32_t(kPage) + int32_t(pos % kPage);
      l.slots.push_back(slot);
      if (pos >= first_q) {
        l.positions.push_back(int32_t(pos));
        l.query_slots.push_back(slot);
      }
    }
    l.seqs.push_back({int32_t(row), int32_t(s.nq), int32_t(first_q), int32_t(offset)});
    row += s.nq;
    max_q = std::max(max_q, s.nq);
    max_keys = std::max(max_keys, a.window ? std::min<size_t>(a.window, s.ctx) : s.ctx);
  }
  gptoss_attn_shape& sh = l.shape;
  sh.struct_size = sizeof sh;
  sh.n_tokens = uint32_t(row);
  sh.n_seqs = uint32_t(a.seqs.size());
  sh.n_heads = uint32_t(a.n_heads);
  sh.window = a.window;
  sh.scale = 0.125f;
  sh.max_q = uint32_t(max_q);
  sh.max_keys = uint32_t(max_keys);
  return l;
}

gptoss_kv_desc kv_desc(const Attn& a, size_t max_pages) {
  gptoss_kv_desc d{};
  d.struct_size = sizeof d;
  d.n_layers = 2;
  d.n_kv_heads = uint32_t(a.n_kv);
  d.head_dim = uint32_t(a.hd);
  d.page_size = uint32_t(kPage);
  d.dtype = a.dtype;
  d.max_pages = max_pages;
  return d;
}

// Writes `n` rows of random K and V at `slots` of both layers (layer 0 with other values, so
// reading the wrong layer shows).
void fill(Run& r, const std::array<gptoss_backend_kv_t, 2>& kv, const std::vector<int32_t>& slots,
          size_t kv_dim, uint32_t seed) {
  const size_t n = slots.size();
  if (n == 0) return;
  const auto s = r.input(slots);
  for (uint32_t layer = 0; layer < 2; ++layer) {
    const auto k = r.input(random_floats(n * kv_dim, seed + 2 * layer, -2.0f, 2.0f));
    const auto v = r.input(random_floats(n * kv_dim, seed + 2 * layer + 1, -2.0f, 2.0f));
    for (int i = 0; i < 2; ++i) {
      Dev& d = r.dev(i);
      d.check(d.api().kv_write(d.stream(), kv[size_t(i)], layer, k[size_t(i)], v[size_t(i)], s[size_t(i)], n),
              "kv_write");
    }
  }
}

// A cache of max_pages on each device, `pages` of them usable.
std::array<gptoss_backend_kv_t, 2> caches(Run& r, const Attn& a, size_t max_pages, size_t pages) {
  return {r.dev(0).kv(kv_desc(a, max_pages), pages), r.dev(1).kv(kv_desc(a, max_pages), pages)};
}

// What an attention call over layer 1 of `kv` needs besides q: sinks, the sequences and page
// tables of `l`, a guarded output.
struct Attending {
  Attending(Run& r, const Attn& a, const Layout& l, uint32_t seed)
      : sinks(random_tensor(gptoss_dtype_bf16, {int64_t(a.n_heads)}, seed, "sinks",
                            gptoss_tensor_attn_sinks)),
        S(r.weight(*sinks)), seqs(r.input(l.seqs)), pt(r.input(l.page_table)),
        out(r.output(size_t(l.shape.n_tokens) * a.n_heads * a.hd * 4)), shape(l.shape) {}
  void call(Run& r, int i, Buf q, gptoss_backend_kv_t kv) const {
    Dev& d = r.dev(i);
    d.check(d.api().attention(d.stream(), q, kv, 1, S[size_t(i)], seqs[size_t(i)], pt[size_t(i)], &shape,
                              out[size_t(i)].view),
            "attention");
  }
  std::shared_ptr<const HostTensor> sinks;
  std::array<Wt, 2> S;
  std::array<Buf, 2> seqs, pt;
  std::array<Guarded, 2> out;
  gptoss_attn_shape shape;
};

Case attention_case(const Attn& a, Shapes shapes) {
  return {"attention", a.describe(), shapes, [=](Pair& p) {
            Run r(p);
            const Layout l = layout(a, 7);
            const auto kv = caches(r, a, l.pages, l.pages);
            fill(r, kv, l.slots, a.kv_dim(), 11);
            const Attending att(r, a, l, 3);
            const auto q = r.input(random_floats(size_t(l.shape.n_tokens) * a.n_heads * a.hd, 5, -3.0f, 3.0f));
            return r.finish("attention", [&](int i) { att.call(r, i, q[size_t(i)], kv[size_t(i)]); },
                            {att.out[0]}, {att.out[1]});
          }};
}

// The fused slot writes the query rows' keys itself; attention then reads them.
Case rope_kv_write_case(const Attn& a, Shapes shapes) {
  return {"rope_kv_write", a.describe(), shapes, [=](Pair& p) {
            Run r(p);
            const Layout l = layout(a, 9);
            const auto kv = caches(r, a, l.pages, l.pages);
            std::vector<int32_t> earlier;  // every held slot but the query rows'
            for (int32_t s : l.slots)
              if (std::find(l.query_slots.begin(), l.query_slots.end(), s) == l.query_slots.end()) earlier.push_back(s);
            fill(r, kv, earlier, a.kv_dim(), 13);
            const Attending att(r, a, l, 4);
            const size_t T = l.shape.n_tokens;
            auto q = r.output(T * a.n_heads * a.hd * 4);  // rotated in place
            const auto q_in = random_floats(T * a.n_heads * a.hd, 15, -3.0f, 3.0f);
            for (int i = 0; i < 2; ++i) r.dev(i).write(q[size_t(i)].view, q_in.data(), q_in.size() * 4);
            const auto k = r.input(random_floats(T * a.kv_dim(), 16, -2.0f, 2.0f));
            const auto v = r.input(random_floats(T * a.kv_dim(), 17, -2.0f, 2.0f));
            const auto pos = r.input(l.positions), slots = r.input(l.query_slots);
            const gptoss_rope_params rope = {150000.0, 32.0, 4096.0, 32.0, 1.0, 0};
            return r.finish("rope_kv_write", [&](int i) {
              Dev& d = r.dev(i);
              const auto& api = d.api();
              if (i == 0) {
                d.check(api.rope(d.stream(), q[0].view, pos[0], T, a.n_heads, a.hd, &rope), "rope q");
                d.check(api.rope(d.stream(), k[0], pos[0], T, a.n_kv, a.hd, &rope), "rope k");
                d.check(api.kv_write(d.stream(), kv[0], 1, k[0], v[0], slots[0], T), "kv_write");
              } else {
                d.check(api.rope_kv_write(d.stream(), q[1].view, k[1], v[1], pos[1], T, a.n_heads, &rope, kv[1], 1,
                                          slots[1]),
                        "rope_kv_write");
              }
              att.call(r, i, q[size_t(i)].view, kv[size_t(i)]);
            }, {q[0], att.out[0]}, {q[1], att.out[1]});
          }};
}

// A cache made with half its pages, written, grown to all of them, written again: attention
// over both halves must see what was written before the growth.
Case kv_grow_case(const Attn& a) {
  return {"kv_grow", a.describe(), Shapes::tails, [=](Pair& p) {
            Run r(p);
            const Layout l = layout(a, 21);
            const size_t half = l.pages / 2;
            const auto kv = caches(r, a, l.pages, half);
            std::vector<int32_t> before, after;
            for (int32_t s : l.slots) (size_t(s) / kPage < half ? before : after).push_back(s);
            fill(r, kv, before, a.kv_dim(), 23);
            for (int i = 0; i < 2; ++i) {
              Dev& d = r.dev(i);
              d.sync();
              d.check(d.api().kv_grow(d.dev(), kv[size_t(i)], l.pages), "kv_grow");
            }
            fill(r, kv, after, a.kv_dim(), 29);
            const Attending att(r, a, l, 5);
            const auto q = r.input(random_floats(size_t(l.shape.n_tokens) * a.n_heads * a.hd, 31, -3.0f, 3.0f));
            return r.finish("kv_grow", [&](int i) { att.call(r, i, q[size_t(i)], kv[size_t(i)]); },
                            {att.out[0]}, {att.out[1]});
          }};
}

}  // namespace

void attention_cases(std::vector<Case>& c) {
  const Shapes tails = Shapes::tails, real = Shapes::real;
  for (gptoss_kv_dtype dt : {gptoss_kv_dtype_f32, gptoss_kv_dtype_bf16}) {
    c.push_back(attention_case({8, 1, 64, dt, 0, {{1, 1}}}, tails));        // the first token alone
    c.push_back(attention_case({8, 2, 64, dt, 0, {{17, 17}}}, tails));      // a prompt, page tail
    c.push_back(attention_case({4, 2, 20, dt, 0, {{40, 1}, {5, 5}, {70, 3}}}, tails));
    c.push_back(attention_case({8, 1, 64, dt, 16, {{100, 7}, {33, 1}}}, tails));  // released pages
    c.push_back(attention_case({64, 8, 64, dt, 0, {{4096, 1}}}, real));      // long decode
    c.push_back(attention_case({64, 8, 64, dt, 128, {{4096, 1}, {300, 1}}}, real));
    c.push_back(attention_case({64, 8, 64, dt, 128, {{300, 64}, {96, 96}}}, real));  // prefill chunks
    c.push_back(rope_kv_write_case({8, 2, 64, dt, 0, {{40, 3}, {9, 9}}}, tails));
    c.push_back(rope_kv_write_case({64, 8, 64, dt, 128, {{700, 1}, {200, 5}}}, real));
  }
  c.push_back(kv_grow_case({8, 2, 32, gptoss_kv_dtype_f32, 0, {{200, 2}, {150, 1}}}));
}

}  // namespace gptoss::conformance::ops
