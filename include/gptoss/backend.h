/*
 * libgptoss backend plugin ABI. Plain C, installed, so that backends can be built out of
 * tree. A plugin includes this header and nothing else of libgptoss, and does not link
 * libgptoss: everything it needs from the host comes through struct gptoss_host_api.
 *
 * A plugin is a shared library exporting:
 *   uint32_t gptoss_backend_score(void);   optional; 0 = cannot run on this machine,
 *                                           higher = preferred by "auto"
 *   const char* gptoss_backend_unavailable_reason(void);
 *                                           optional; when the score is 0, why (e.g. "no CUDA
 *                                           device"), for the host's log; static storage
 *   enum gptoss_status gptoss_backend_init(const struct gptoss_host_api* host,
 *                                          const struct gptoss_backend_api** api_out);
 *
 * Stability rules: fields of both tables are only ever appended. The host refuses a plugin
 * whose abi_major differs from GPTOSS_BACKEND_ABI_MAJOR, and never reads a slot at or beyond
 * the plugin's struct_size. Slots marked optional may be NULL (the core falls back).
 * Offsets of every released slot are frozen by static_asserts in libgptoss/backend/.
 *
 * Execution model: ops are enqueued on a stream and may run asynchronously; the order of ops
 * on one stream is the order of calls. buffer_read and stream_synchronize wait. Ops take
 * device buffers (void*, from buffer_alloc) and weights (void*, from weight_upload). Sizes are
 * in elements unless named *_bytes. Activations are f32 row-major [tokens, features].
 */
#ifndef GPTOSS_BACKEND_H_
#define GPTOSS_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include "../gptoss.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPTOSS_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GPTOSS_PLUGIN_EXPORT
#endif

#define GPTOSS_BACKEND_ABI_MAJOR 1
#define GPTOSS_BACKEND_ABI_MINOR 1

/* Element types of weights. */
enum gptoss_dtype {
  gptoss_dtype_f32 = 0,
  gptoss_dtype_bf16 = 1,
  gptoss_dtype_f16 = 2,
  /* ggml Q8_0: blocks of 32 values, 34 bytes: f16 scale d, then 32 int8 q; value = d*q. */
  gptoss_dtype_q8_0 = 3,
  /* MXFP4 as in the OpenAI checkpoint: `data` = 16 bytes per block of 32 values, code of
   * element 2j in the low nibble of byte j and 2j+1 in the high nibble; `scales` = one E8M0
   * byte per block (value 2^(e-127)). Codes: magnitudes {0,.5,1,1.5,2,3,4,6}, bit 3 = sign. */
  gptoss_dtype_mxfp4 = 4
};

/* What a tensor is. The core hands every tensor in this canonical form whatever the file
 * format (it converts GGUF layouts). Shapes are row-major, outermost first. */
enum gptoss_tensor_role {
  gptoss_tensor_embedding = 0,     /* [vocab, hidden]                                   */
  gptoss_tensor_unembedding = 1,   /* [vocab, hidden]                                   */
  gptoss_tensor_final_norm = 2,    /* [hidden]                                          */
  gptoss_tensor_attn_norm = 3,     /* [hidden]                                          */
  gptoss_tensor_attn_q = 4,        /* [heads*head_dim, hidden]                          */
  gptoss_tensor_attn_q_bias = 5,   /* [heads*head_dim]                                  */
  gptoss_tensor_attn_k = 6,        /* [kv_heads*head_dim, hidden]                       */
  gptoss_tensor_attn_k_bias = 7,   /* [kv_heads*head_dim]                               */
  gptoss_tensor_attn_v = 8,        /* [kv_heads*head_dim, hidden]                       */
  gptoss_tensor_attn_v_bias = 9,   /* [kv_heads*head_dim]                               */
  gptoss_tensor_attn_out = 10,     /* [hidden, heads*head_dim]                          */
  gptoss_tensor_attn_out_bias = 11, /* [hidden]                                         */
  gptoss_tensor_attn_sinks = 12,   /* [heads]                                           */
  gptoss_tensor_mlp_norm = 13,     /* [hidden]                                          */
  gptoss_tensor_router = 14,       /* [experts, hidden]                                 */
  gptoss_tensor_router_bias = 15,  /* [experts]                                         */
  /* [experts, 2*intermediate, hidden], rows interleaved: 2i = glu (gate), 2i+1 = linear */
  gptoss_tensor_mlp1 = 16,
  gptoss_tensor_mlp1_bias = 17,    /* [experts, 2*intermediate], interleaved likewise    */
  gptoss_tensor_mlp2 = 18,         /* [experts, hidden, intermediate]                   */
  gptoss_tensor_mlp2_bias = 19     /* [experts, hidden]                                 */
};

/* The tensor's bytes stay valid (in the model's memory map) for as long as the model lives:
 * a backend may keep pointers to them instead of copying. Without this flag the host memory
 * is valid only during the weight_upload call. */
#define GPTOSS_TENSOR_PERSISTENT 1u

struct gptoss_tensor_desc {
  size_t struct_size;
  const char* name;             /* canonical name, e.g. "layers.3.mlp1", for messages */
  enum gptoss_tensor_role role;
  int32_t layer;                /* -1 for non-layer tensors */
  enum gptoss_dtype dtype;
  uint32_t ndim;                /* 1..3 */
  int64_t shape[4];             /* logical element shape */
  const void* data;             /* host memory */
  size_t data_size;             /* bytes */
  const void* scales;           /* mxfp4 only: one byte per block; else NULL */
  size_t scales_size;
  uint32_t flags;               /* GPTOSS_TENSOR_PERSISTENT */
};

/* YaRN-scaled NeoX RoPE: the first half of each head is rotated against the second half. */
struct gptoss_rope_params {
  double theta;                 /* 150000 */
  double scaling_factor;        /* 32; 1 = plain RoPE */
  double original_context;      /* 4096 */
  double beta_fast;             /* 32 */
  double beta_slow;             /* 1 */
  int32_t truncate;             /* 1: round the ramp bounds (llama.cpp); 0: OpenAI reference */
};

/* Per query token of an attention call. The keys of token t are positions
 * [kv_start, pos] of its sequence; the slot of position j is
 * page_table[page_table_offset + j / page_size] * page_size + j % page_size. */
struct gptoss_attn_token {
  int32_t pos;
  int32_t kv_start;
  int32_t page_table_offset;
  int32_t reserved;
};

/* What the host offers the plugin. */
struct gptoss_host_api {
  size_t struct_size;
  uint16_t abi_major, abi_minor;
  /* Logs through the host's logger (silent unless the application installed a callback). */
  void (*log)(enum gptoss_log_level level, const char* message);
  uint32_t num_threads;         /* threads the application asked for; 0 = all cores */
};

struct gptoss_backend_api {
  /* First fields never move. */
  size_t struct_size;
  uint16_t abi_major, abi_minor;
  const char* name;             /* "cpu", "cuda", "hip" */

  /* ABI 1.0 */
  /* Devices this backend can drive here (0 = none). */
  int32_t (*device_count)(void);
  /* Writes a human-readable device description (NUL-terminated, truncated to capacity). */
  void (*device_describe)(int32_t device, char* out, size_t capacity);
  enum gptoss_status (*device_open)(int32_t device, uint32_t num_threads, void** dev_out);
  void (*device_close)(void* dev);
  /* The last error of this device as text (for messages); never NULL. */
  const char* (*last_error)(void* dev);

  enum gptoss_status (*stream_create)(void* dev, void** stream_out);
  void (*stream_destroy)(void* dev, void* stream);
  enum gptoss_status (*stream_synchronize)(void* stream);

  enum gptoss_status (*buffer_alloc)(void* dev, size_t bytes, void** buf_out);
  void (*buffer_free)(void* dev, void* buf);
  enum gptoss_status (*buffer_write)(void* stream, void* buf, size_t offset, const void* host,
                                     size_t bytes);
  /* Waits for the stream, then copies. */
  enum gptoss_status (*buffer_read)(void* stream, const void* buf, size_t offset, void* host,
                                    size_t bytes);
  enum gptoss_status (*buffer_copy)(void* stream, void* dst, size_t dst_offset, const void* src,
                                    size_t src_offset, size_t bytes);

  /* Weights arrive once, at load, in canonical form; the backend picks its own layout. */
  enum gptoss_status (*weight_upload)(void* dev, const struct gptoss_tensor_desc* desc,
                                      void** weight_out);
  void (*weight_free)(void* dev, void* weight);

  /* out[t, :] = row tokens[t] of the embedding. tokens: int32 [n_tokens]. */
  enum gptoss_status (*embedding)(void* stream, const void* weight, const void* tokens,
                                  size_t n_tokens, void* out);
  /* out = x / sqrt(mean(x^2) + eps) * scale, per row of `dim`; fp32 throughout. */
  enum gptoss_status (*rmsnorm)(void* stream, const void* x, const void* scale, size_t n_tokens,
                                size_t dim, float eps, void* out);
  /* out[t, n] = sum_k x[t, k] * W[n, k] (+ bias[n]); W is [n_out, n_in]. bias may be NULL. */
  enum gptoss_status (*linear)(void* stream, const void* x, const void* weight, const void* bias,
                               size_t n_tokens, size_t n_in, size_t n_out, void* out);
  /* In place on x [n_tokens, n_heads * head_dim]; positions: int32 [n_tokens]. */
  enum gptoss_status (*rope)(void* stream, void* x, const void* positions, size_t n_tokens,
                             size_t n_heads, size_t head_dim,
                             const struct gptoss_rope_params* params);
  /* Writes rows of k and v ([n_tokens, kv_dim] f32) into the caches at slots (int32
   * [n_tokens]); caches hold `kv_dtype` elements, kv_dim per slot. */
  enum gptoss_status (*kv_write)(void* stream, void* k_cache, void* v_cache,
                                 enum gptoss_kv_dtype kv_dtype, const void* k, const void* v,
                                 const void* slots, size_t n_tokens, size_t kv_dim);
  /* Attention with sinks over paged KV. q: [n_tokens, n_heads*head_dim]; tokens: struct
   * gptoss_attn_token [n_tokens]; page_table: int32; sinks: weight [n_heads]; scale applied to
   * q.k; query head h reads KV head h / (n_heads / n_kv_heads). out like q. */
  enum gptoss_status (*attention)(void* stream, const void* q, const void* k_cache,
                                  const void* v_cache, enum gptoss_kv_dtype kv_dtype,
                                  const void* sinks, const void* tokens, const void* page_table,
                                  size_t n_tokens, size_t n_heads, size_t n_kv_heads,
                                  size_t head_dim, size_t page_size, float scale, void* out);
  /* Router: logits = W x + b over n_experts; the top_k experts (ties: lower index first) and
   * softmax over their logits. expert_ids: int32 [n_tokens, top_k]; expert_weights: f32. */
  enum gptoss_status (*router)(void* stream, const void* x, const void* weight, const void* bias,
                               size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                               void* expert_ids, void* expert_weights);
  /* MoE block: for each token and each of its top_k experts e: h = mlp1[e] x + b1[e]
   * (2*inter rows, interleaved), glu = min(h[2i], limit), lin = clamp(h[2i+1], -limit, limit),
   * a[i] = glu * sigmoid(1.702 glu) * (lin + 1); y = mlp2[e] a + b2[e];
   * out[t] = sum over k of expert_weights[t, k] * y. */
  enum gptoss_status (*moe)(void* stream, const void* x, const void* expert_ids,
                            const void* expert_weights, const void* mlp1, const void* mlp1_bias,
                            const void* mlp2, const void* mlp2_bias, size_t n_tokens, size_t dim,
                            size_t intermediate, size_t top_k, float swiglu_limit, void* out);
  /* x[i] += y[i] for i < n. */
  enum gptoss_status (*add)(void* stream, void* x, const void* y, size_t n);

  /* ABI 1.1 */
  /* Optional (NULL: the backend computes one way, treated as exact). Called once after
   * device_open, before any weight_upload. gptoss_precision_exact: fp32 activations and
   * accumulation; gptoss_precision_fast: the backend may quantize activations. */
  enum gptoss_status (*device_set_precision)(void* dev, enum gptoss_precision precision);
};

typedef uint32_t (*gptoss_backend_score_fn)(void);
typedef const char* (*gptoss_backend_unavailable_reason_fn)(void);
typedef enum gptoss_status (*gptoss_backend_init_fn)(const struct gptoss_host_api* host,
                                                     const struct gptoss_backend_api** api_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPTOSS_BACKEND_H_ */
