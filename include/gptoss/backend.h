/*
 * libgptoss backend plugin ABI, version 2.1. Plain C (C99), installed, so that backends can be
 * built out of tree. A plugin includes this header and nothing else of libgptoss, and does not
 * link libgptoss: everything it needs from the host comes through struct gptoss_host_api.
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
 * STABILITY. Fields of every struct here are only ever appended (a minor version bump). The
 * host refuses a plugin whose abi_major differs from GPTOSS_BACKEND_ABI_MAJOR (an ABI 1 plugin
 * is refused with a message saying so), and never reads a slot at or beyond the plugin's
 * struct_size. Slots marked OPTIONAL may be NULL: the core then does what the slot's comment
 * says instead. Every slot not marked optional is required. Offsets of every released slot are
 * frozen by static_asserts in libgptoss/backend/abi_freeze.cpp.
 *
 * OBJECTS. All handles are opaque to the core: it never dereferences, offsets or compares them
 * beyond equality, and never reads device memory except through buffer_read.
 *   device  (device_open)   one accelerator (or, for the CPU backend, a share of the machine)
 *   stream  (stream_create) an in-order queue of work on one device
 *   buffer  (buffer_alloc, buffer_view)  device memory
 *   weight  (weight_upload) one model tensor in the backend's own layout
 *   kv      (kv_create)     a paged K/V cache in the backend's own layout
 *   event   (event_create)  a point in a stream that another stream can wait for
 *
 * EXECUTION. Ops are enqueued on a stream and may run asynchronously, in the order of the
 * calls. They return at once: a status other than success means the call was refused (bad
 * arguments the backend can check on the host) and nothing was enqueued. A failure while an
 * op runs is ASYNCHRONOUS: the backend records it and returns it from the next synchronising
 * call on that stream (stream_synchronize, buffer_read), after which last_error names the op
 * that failed ("moe: out of memory"); the record is then cleared. A backend whose device can
 * no longer work (a lost GPU) fails every later call instead. No slot may abort the process.
 * Host pointers given to a slot (parameter structs, launch hints, host data of buffer_write)
 * are valid during the call only, unless the slot says otherwise. Host memory given to the
 * core by a slot (last_error, device_describe) is owned by the backend.
 *
 * THREADS. Slots taking a device may be called from several host threads at once (contexts of
 * one model processed in parallel). A stream is used by one host thread at a time.
 *
 * MEMORY ON THE HOT PATH. The core allocates one buffer per device and batch shape (its step
 * arena), carves it with buffer_view once, and reuses it for every step of that shape; streams
 * and events live as long as the batch. A decode step therefore allocates nothing, creates
 * nothing, and issues the same calls with the same handles every time (see step_begin): a
 * backend may capture a step once and replay it (CUDA graphs).
 *
 * LAUNCH HINTS. Everything the core knows on the host about a call's work (tokens, sequences,
 * the most query rows per sequence, the most keys per query) is passed in host structs, so a
 * backend never needs to read device data back to size a launch. The one quantity the host
 * does not know is how many tokens the router sends to each expert: a device backend groups
 * tokens by expert on the device (a histogram and prefix sum over expert_ids, at most
 * n_tokens * top_k entries) rather than reading the router's output.
 *
 * Sizes are in elements unless named *_bytes. Activations are f32, row-major
 * [n_tokens, features]. An op writes every element of its outputs and nothing outside them,
 * and does not modify its inputs unless it says "in place". Outputs never overlap inputs.
 */
#ifndef GPTOSS_BACKEND_H_
#define GPTOSS_BACKEND_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../gptoss.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPTOSS_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GPTOSS_PLUGIN_EXPORT
#endif

#define GPTOSS_BACKEND_ABI_MAJOR 2
#define GPTOSS_BACKEND_ABI_MINOR 1

/* Opaque handles (see OBJECTS above). A backend casts its own pointers to these types. */
typedef struct gptoss_backend_device* gptoss_backend_device_t;
typedef struct gptoss_backend_stream* gptoss_backend_stream_t;
typedef struct gptoss_backend_buffer* gptoss_backend_buffer_t;
typedef struct gptoss_backend_weight* gptoss_backend_weight_t;
typedef struct gptoss_backend_kv* gptoss_backend_kv_t;
typedef struct gptoss_backend_event* gptoss_backend_event_t;

/* ------------------------------------------------------------------------------------------ */
/* Weights                                                                                    */

/* Element types of weights. */
enum gptoss_dtype {
  gptoss_dtype_f32 = 0,
  gptoss_dtype_bf16 = 1,
  gptoss_dtype_f16 = 2,
  /* ggml Q8_0: blocks of 32 values, 34 bytes: f16 scale d, then 32 int8 q; value = d*q. */
  gptoss_dtype_q8_0 = 3,
  /* MXFP4 as in the OpenAI checkpoint: `data` = 16 bytes per block of 32 values, code of
   * element 2j in the low nibble of byte j and 2j+1 in the high nibble; `scales` = one E8M0
   * byte per block. Values: gptoss_mxfp4_value(code) * gptoss_e8m0_to_f32(scale). */
  gptoss_dtype_mxfp4 = 4
};

/* E2M1 code (bit 3 = sign, magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}) to its value. The one
 * definition of the format for the core, every backend and the tests. */
static inline float gptoss_mxfp4_value(uint8_t code) {
  static const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8u) ? -magnitude[code & 7u] : magnitude[code & 7u];
}

/* E8M0 scale byte e to 2^(e-127): the float with exponent bits e, except e = 0, the subnormal
 * 2^-127. e = 255 gives +infinity (2^128 overflows float), as llama.cpp's conversion and OpenAI's
 * reference (ldexp in bf16) give for non-zero codes; the OCP MX spec calls it NaN. No real
 * checkpoint holds it; every path of the library decodes it the same way. */
static inline float gptoss_e8m0_to_f32(uint8_t e) {
  const uint32_t bits = e == 0 ? UINT32_C(0x00400000) : (uint32_t)e << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

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
 * a backend may keep pointers to them, or read them after weight_upload returns (until
 * weights_end). Without this flag the host memory is valid only during the weight_upload
 * call. */
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
  /* Expert tensors (mlp1, mlp1_bias, mlp2, mlp2_bias) may hold a slice of a layer's experts
   * (expert parallelism over several devices): shape[0] experts starting at this index of
   * the layer's numbering, which expert_ids use. 0 for everything else. */
  int32_t first_expert;
};

/* ------------------------------------------------------------------------------------------ */
/* Parameters and launch hints of ops (host memory, valid during the call)                    */

/* YaRN-scaled NeoX RoPE: the first half of each head is rotated against the second half. */
struct gptoss_rope_params {
  double theta;                 /* 150000 */
  double scaling_factor;        /* 32; 1 = plain RoPE */
  double original_context;      /* 4096 */
  double beta_fast;             /* 32 */
  double beta_slow;             /* 1 */
  int32_t truncate;             /* 1: round the ramp bounds (llama.cpp); 0: OpenAI reference */
};

/* One sequence of an attention call (DEVICE memory, an array written by the core). Its query
 * rows are q_begin .. q_begin + n_q - 1, at positions pos_begin .. pos_begin + n_q - 1. The
 * slot of position j is page_table[page_table_offset + j / page_size] * page_size
 * + j % page_size. The sequences of a call cover rows [0, n_tokens) in order. */
struct gptoss_attn_seq {
  int32_t q_begin;
  int32_t n_q;
  int32_t pos_begin;
  int32_t page_table_offset;
};

/* Shape and launch hints of an attention call (host memory). */
struct gptoss_attn_shape {
  size_t struct_size;
  uint32_t n_tokens;            /* query rows: the sum of the sequences' n_q */
  uint32_t n_seqs;
  uint32_t n_heads;             /* query heads; head h reads KV head h / (n_heads / n_kv_heads) */
  uint32_t window;              /* 0: a query at position p sees keys [0, p]; W > 0: keys
                                   [max(0, p - W + 1), p] (a sliding window, itself included) */
  float scale;                  /* applied to q.k: 1/sqrt(head_dim) */
  uint32_t max_q;               /* hint: the largest n_q of the call */
  uint32_t max_keys;            /* hint: the most keys one query sees */
  uint32_t reserved;            /* 0 */
};

/* A forward step, given to step_begin (host memory). */
struct gptoss_step_hints {
  size_t struct_size;
  uint32_t n_tokens;            /* tokens of the step, over all sequences */
  uint32_t n_seqs;
  uint32_t max_q;               /* most tokens of one sequence */
  uint32_t n_logit_rows;        /* rows whose logits the step computes */
  uint32_t n_sample_rows;       /* of which sampled on the device */
  uint32_t max_keys;            /* the most keys one query sees in a full-attention layer */
};

/* ------------------------------------------------------------------------------------------ */
/* KV cache                                                                                   */

/* What the core asks of a KV cache. The cache holds n_layers layers; a page holds page_size
 * consecutive positions of every one of them, K and V. slot = page * page_size + offset. */
struct gptoss_kv_desc {
  size_t struct_size;
  uint32_t n_layers;            /* ops name a layer by its index here, < n_layers */
  uint32_t n_kv_heads;
  uint32_t head_dim;
  uint32_t page_size;           /* GPTOSS_KV_PAGE_SIZE */
  enum gptoss_kv_dtype dtype;   /* f32: exact; bf16: rounded to nearest even on write */
  uint32_t reserved;            /* 0 */
  size_t max_pages;             /* the most pages kv_grow will ever ask for */
};

/* ------------------------------------------------------------------------------------------ */
/* Sampling on the device                                                                     */

#define GPTOSS_SAMPLE_MAX_TOP 20

/* How to sample one row (DEVICE memory, an array written by the core). */
struct gptoss_sample_row {
  float temperature;            /* 0: greedy */
  uint32_t top_k;               /* 0: off */
  float top_p;                  /* 1: off; in (0, 1] */
  float min_p;                  /* 0: off; in [0, 1) */
  double uniform;               /* in [0, 1): the host sampler's next draw from its seeded RNG
                                   (unused when greedy). The randomness is the host's, so host
                                   and device sampling take the same tokens for one seed. */
  uint32_t top_n;               /* alternatives to report, 0..GPTOSS_SAMPLE_MAX_TOP */
  uint32_t reserved;            /* 0 */
};

struct gptoss_sample_token {
  uint32_t token;
  float logprob;
};

/* What sampling one row gives (DEVICE memory, written by the op). */
struct gptoss_sample_result {
  uint32_t token;               /* UINT32_MAX when the mask allows no token */
  float logprob;                /* natural log of its probability (see sample) */
  uint32_t n_top;               /* = the row's top_n */
  uint32_t reserved;
  struct gptoss_sample_token top[GPTOSS_SAMPLE_MAX_TOP]; /* most likely first */
};

/* Shape and launch hints of a sample call (host memory). */
struct gptoss_sample_shape {
  size_t struct_size;
  uint32_t n_rows;
  uint32_t vocab;
  uint32_t max_top_k;           /* hint: the largest top_k of the rows (0 if none set one) */
  uint32_t max_top_n;           /* hint: the largest top_n */
  uint32_t all_greedy;          /* hint: 1 when every row has temperature 0 */
  uint32_t reserved;            /* 0 */
};

/* ------------------------------------------------------------------------------------------ */
/* The tables                                                                                 */

/* What the host offers the plugin. */
struct gptoss_host_api {
  size_t struct_size;
  uint16_t abi_major, abi_minor;
  /* Logs through the host's logger (silent unless the application installed a callback). */
  void (*log)(enum gptoss_log_level level, const char* message);
  uint32_t num_threads;         /* threads the application asked for; 0 = all cores */
};

/* Flags of struct gptoss_backend_api. */
#define GPTOSS_BACKEND_EXPLICIT_ONLY 1u /* never chosen by "auto" (test and debug backends) */

/* What results on a device guarantee (struct gptoss_backend_device_properties.flags). */
/* Batch invariance: every op gives a token (a row) bit for bit the same result whatever other
 * rows the call holds and wherever the row stands in it; attention's result for a query is the
 * same whether the keys before it were written in this call or by earlier ones. A sequence's
 * logits then do not depend on what it is batched with, how its prompt is chunked, or whether
 * its prefix's KV came from an earlier request (the prefix cache). It holds for every KV dtype
 * the backend offers; a backend declares it only where its tests check it. */
#define GPTOSS_DEVICE_BATCH_INVARIANT 1u

/* since ABI 2.1 (24 bytes). Filled by the device_properties slot. */
struct gptoss_backend_device_properties {
  size_t struct_size;  /* set by the core: the fields it knows (a plugin fills no more) */
  uint32_t flags;      /* GPTOSS_DEVICE_*; 0 where the core leaves it */
  const char* kernels; /* the kernel variant in use ("avx512", "scalar", "sm_90"), static
                          storage; NULL: not named */
};

struct gptoss_backend_api {
  /* First fields never move, whatever the version. */
  size_t struct_size;
  uint16_t abi_major, abi_minor;
  const char* name;             /* "cpu", "cuda", "hip" */

  /* ---- ABI 2.0 ---------------------------------------------------------------------- */
  uint32_t flags;               /* GPTOSS_BACKEND_* */

  /* -- Devices -- */
  /* Devices this backend can drive here (0 = none). */
  int32_t (*device_count)(void);
  /* Writes a human-readable description (NUL-terminated, truncated to capacity). */
  void (*device_describe)(int32_t device, char* out, size_t capacity);
  /* num_threads: host threads the application allows (0 = all cores); a GPU may ignore it.
   * On failure *dev_out is untouched and last_error(NULL) says why. */
  enum gptoss_status (*device_open)(int32_t device, uint32_t num_threads,
                                    gptoss_backend_device_t* dev_out);
  /* Nothing allocated on the device may outlive this call. */
  void (*device_close)(gptoss_backend_device_t dev);
  /* The message of the last failed call on `dev` made by the calling thread (NULL dev: of
   * device_open); for a failure reported asynchronously, it names the op. Never NULL; valid
   * until the calling thread's next call on the device. */
  const char* (*last_error)(gptoss_backend_device_t dev);
  /* OPTIONAL (NULL: one way of computing, treated as exact). Called once after device_open,
   * before any weight_upload. exact: fp32 activations and accumulation; fast: the backend may
   * quantize activations (int8, bf16). */
  enum gptoss_status (*device_set_precision)(gptoss_backend_device_t dev,
                                             enum gptoss_precision precision);
  /* OPTIONAL (NULL: unknown). Bytes of device memory free now and in all. */
  enum gptoss_status (*device_memory_info)(gptoss_backend_device_t dev, size_t* free_bytes,
                                           size_t* total_bytes);

  /* -- Streams and events -- */
  /* Created once per batch of contexts (a KV pool) and device, never per step. */
  enum gptoss_status (*stream_create)(gptoss_backend_device_t dev,
                                      gptoss_backend_stream_t* stream_out);
  /* Waits for the stream's work first. */
  void (*stream_destroy)(gptoss_backend_device_t dev, gptoss_backend_stream_t stream);
  /* Waits for every op enqueued on the stream; returns the first asynchronous failure since
   * the last synchronising call on it (see EXECUTION). */
  enum gptoss_status (*stream_synchronize)(gptoss_backend_stream_t stream);
  /* OPTIONAL, all four or none (NULL: the core calls stream_synchronize on the recording
   * stream instead of making another stream wait). Created once per batch, never per step. */
  enum gptoss_status (*event_create)(gptoss_backend_device_t dev, gptoss_backend_event_t* ev_out);
  void (*event_destroy)(gptoss_backend_device_t dev, gptoss_backend_event_t ev);
  /* The event completes when every op enqueued on `stream` before this call has. */
  enum gptoss_status (*event_record)(gptoss_backend_stream_t stream, gptoss_backend_event_t ev);
  /* Ops enqueued on `stream` after this call start after the event's last record completes.
   * The stream may belong to another device of this backend than the event. */
  enum gptoss_status (*stream_wait_event)(gptoss_backend_stream_t stream,
                                          gptoss_backend_event_t ev);

  /* -- Buffers -- */
  /* bytes > 0 of device memory, 256-byte aligned. Contents undefined (NOT zero-filled): the
   * core writes every byte before reading it. Never called on the hot path (see MEMORY).
   * insufficient_memory leaves *buf_out untouched. */
  enum gptoss_status (*buffer_alloc)(gptoss_backend_device_t dev, size_t bytes,
                                     gptoss_backend_buffer_t* buf_out);
  /* A buffer from buffer_alloc (not a view); NULL is a no-op. No op using it may be pending
   * (the core synchronizes first); its views die with it. */
  void (*buffer_free)(gptoss_backend_device_t dev, gptoss_backend_buffer_t buf);
  /* A handle to bytes [offset, offset + bytes) of `buf` (itself possibly a view), accepted
   * wherever a buffer is. Allocates no device memory; needs no release; valid until the
   * parent buffer is freed. offset is a multiple of 256. The core makes its views once per
   * arena, never per step. */
  enum gptoss_status (*buffer_view)(gptoss_backend_device_t dev, gptoss_backend_buffer_t buf,
                                    size_t offset, size_t bytes, gptoss_backend_buffer_t* view_out);
  /* Enqueued: host -> device. The host memory may be reused as soon as the call returns (an
   * asynchronous backend copies it to staging first). */
  enum gptoss_status (*buffer_write)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t buf,
                                     size_t offset, const void* host, size_t bytes);
  /* Synchronising: waits for the stream, then copies device -> host. Reports an earlier
   * asynchronous failure like stream_synchronize (host memory untouched then). */
  enum gptoss_status (*buffer_read)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t buf,
                                    size_t offset, void* host, size_t bytes);
  /* Enqueued: device -> device on one device; the ranges do not overlap. */
  enum gptoss_status (*buffer_copy)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t dst,
                                    size_t dst_offset, gptoss_backend_buffer_t src,
                                    size_t src_offset, size_t bytes);
  /* OPTIONAL (NULL: the core copies through host memory with buffer_read + buffer_write).
   * Between two devices of this backend: `dst` belongs to `dst_dev`. Enqueued on src_stream,
   * after its earlier ops. The core orders the destination side: it records an event on
   * src_stream after the copy and makes the destination's stream wait for it, and no op of
   * dst_dev uses dst while the copy may run. */
  enum gptoss_status (*buffer_copy_peer)(gptoss_backend_stream_t src_stream,
                                         gptoss_backend_buffer_t src, size_t src_offset,
                                         gptoss_backend_device_t dst_dev,
                                         gptoss_backend_buffer_t dst, size_t dst_offset,
                                         size_t bytes);

  /* -- Weights: uploaded once, at load, in canonical form; the backend picks its layout -- */
  /* OPTIONAL. Announces the uploads that follow: n_tensors calls of weight_upload holding
   * total_bytes of data and scales as the host has them. A backend may reserve its memory
   * now and fail early with insufficient_memory (before gigabytes are read). */
  enum gptoss_status (*weights_begin)(gptoss_backend_device_t dev, uint64_t total_bytes,
                                      size_t n_tensors);
  /* Checks the desc (shape, sizes, dtype: invalid_argument / unsupported_argument, with
   * last_error naming the tensor) and returns a handle at once. The copy may complete later
   * for GPTOSS_TENSOR_PERSISTENT tensors; others must be copied (or staged) before return. */
  enum gptoss_status (*weight_upload)(gptoss_backend_device_t dev,
                                      const struct gptoss_tensor_desc* desc,
                                      gptoss_backend_weight_t* weight_out);
  /* OPTIONAL; required when uploads complete asynchronously. The completion point: waits for
   * every upload since weights_begin and returns the first that failed (last_error names the
   * tensor). The core calls it once after the last upload, before any op uses a weight. */
  enum gptoss_status (*weights_end)(gptoss_backend_device_t dev);
  /* No op using it may be pending; waits for its upload if that still runs (a load that
   * failed half-way frees what it uploaded without calling weights_end). */
  void (*weight_free)(gptoss_backend_device_t dev, gptoss_backend_weight_t weight);

  /* -- KV cache: the backend owns its memory and layout; the core speaks of pages and slots -- */
  /* A cache whose pages [0, n_pages) are usable (n_pages <= desc->max_pages). Contents
   * undefined. unsupported_argument for a dtype or page size the backend lacks (last_error
   * names it), insufficient_memory. */
  enum gptoss_status (*kv_create)(gptoss_backend_device_t dev, const struct gptoss_kv_desc* desc,
                                  size_t n_pages, gptoss_backend_kv_t* kv_out);
  /* Makes pages [0, n_pages) usable (current <= n_pages <= max_pages), keeping the contents
   * of the pages already there. Synchronous; the core calls it between steps with no op
   * pending on the cache, growing geometrically, so rarely. insufficient_memory leaves the
   * cache as it was. */
  enum gptoss_status (*kv_grow)(gptoss_backend_device_t dev, gptoss_backend_kv_t kv,
                                size_t n_pages);
  /* No op using it may be pending. */
  void (*kv_destroy)(gptoss_backend_device_t dev, gptoss_backend_kv_t kv);

  /* -- Steps -- */
  /* OPTIONAL (NULL: nothing). Bracket one forward step's work on a stream (on every device
   * of a split model). Between them the core first issues every buffer_write of the step, then
   * the ops and copies, and synchronises after step_end. Two steps of the same contexts in the
   * same decode shape (one token per sequence; equal n_logit_rows and n_sample_rows) issue the
   * same op and copy calls with the same handles and sizes. They differ only in their
   * buffer_writes (data and sizes), in host launch hints (attention max_keys, the sample
   * shape) and in the sample call's mask (NULL when no row has one). So a backend may capture
   * the ops of one such step and replay them for the next if it checks those, and its captured
   * kernels must not depend on the hints. */
  enum gptoss_status (*step_begin)(gptoss_backend_stream_t stream,
                                   const struct gptoss_step_hints* hints);
  enum gptoss_status (*step_end)(gptoss_backend_stream_t stream);

  /* -- Ops: the reference composition of the model's math. All enqueued. -- */
  /* out[t, :] = row tokens[t] of the embedding. tokens: int32 [n_tokens], each < vocab (the
   * core checks). */
  enum gptoss_status (*embedding)(gptoss_backend_stream_t stream, gptoss_backend_weight_t weight,
                                  gptoss_backend_buffer_t tokens, size_t n_tokens,
                                  gptoss_backend_buffer_t out);
  /* out = x / sqrt(mean(x^2) + eps) * scale, per row of `dim`; fp32 throughout. */
  enum gptoss_status (*rmsnorm)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                                gptoss_backend_weight_t scale, size_t n_tokens, size_t dim,
                                float eps, gptoss_backend_buffer_t out);
  /* out[t, n] = sum_k x[t, k] * W[n, k] (+ bias[n]); W is [n_out, n_in]; bias may be NULL. */
  enum gptoss_status (*linear)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                               gptoss_backend_weight_t weight, gptoss_backend_weight_t bias,
                               size_t n_tokens, size_t n_in, size_t n_out,
                               gptoss_backend_buffer_t out);
  /* In place on x [n_tokens, n_heads * head_dim]; positions: int32 [n_tokens]. */
  enum gptoss_status (*rope)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                             gptoss_backend_buffer_t positions, size_t n_tokens, size_t n_heads,
                             size_t head_dim, const struct gptoss_rope_params* params);
  /* Stores rows of k and v (f32 [n_tokens, n_kv_heads * head_dim]) at slots (int32
   * [n_tokens], distinct, each < pages * page_size) of layer `layer` of the cache. */
  enum gptoss_status (*kv_write)(gptoss_backend_stream_t stream, gptoss_backend_kv_t kv,
                                 uint32_t layer, gptoss_backend_buffer_t k,
                                 gptoss_backend_buffer_t v, gptoss_backend_buffer_t slots,
                                 size_t n_tokens);
  /* Attention with sinks over the paged cache, for the sequences `seqs` (struct
   * gptoss_attn_seq [shape->n_seqs]) with page tables in `page_table` (int32). q and out:
   * [n_tokens, n_heads * head_dim]. Per query row and head: scores = scale * q.k over the keys
   * the row sees (see gptoss_attn_shape::window), softmax over the scores and the head's sink
   * logit (sinks: weight [n_heads]; the sink joins the denominator only), out = the
   * probability-weighted sum of the values. Pages wholly before a row's first key may have
   * been released (page table entry -1): never read them. */
  enum gptoss_status (*attention)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t q,
                                  gptoss_backend_kv_t kv, uint32_t layer,
                                  gptoss_backend_weight_t sinks, gptoss_backend_buffer_t seqs,
                                  gptoss_backend_buffer_t page_table,
                                  const struct gptoss_attn_shape* shape,
                                  gptoss_backend_buffer_t out);
  /* logits = W x + b over n_experts; the top_k experts (ties: lower index first) and softmax
   * over their logits. expert_ids: int32 [n_tokens, top_k]; expert_weights: f32, same shape. */
  enum gptoss_status (*router)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                               gptoss_backend_weight_t weight, gptoss_backend_weight_t bias,
                               size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                               gptoss_backend_buffer_t expert_ids,
                               gptoss_backend_buffer_t expert_weights);
  /* MoE block: for each token and each of its top_k experts e: h = mlp1[e] x + b1[e]
   * (2*inter rows, interleaved), glu = min(h[2i], limit), lin = clamp(h[2i+1], -limit, limit),
   * a[i] = glu * sigmoid(1.702 glu) * (lin + 1); y = mlp2[e] a + b2[e];
   * out[t] = sum over k of expert_weights[t, k] * y. When the weights hold a slice of the
   * experts (gptoss_tensor_desc::first_expert), experts outside it contribute nothing: devices
   * holding disjoint slices produce partial sums whose total is the block's output. */
  enum gptoss_status (*moe)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                            gptoss_backend_buffer_t expert_ids,
                            gptoss_backend_buffer_t expert_weights, gptoss_backend_weight_t mlp1,
                            gptoss_backend_weight_t mlp1_bias, gptoss_backend_weight_t mlp2,
                            gptoss_backend_weight_t mlp2_bias, size_t n_tokens, size_t dim,
                            size_t intermediate, size_t top_k, float swiglu_limit,
                            gptoss_backend_buffer_t out);
  /* x[i] += y[i] for i < n, in place. */
  enum gptoss_status (*add)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                            gptoss_backend_buffer_t y, size_t n);

  /* -- Fused ops: OPTIONAL each; NULL: the core runs the composition named. Results must
   *    equal the composition's up to floating-point summation order. -- */
  /* = linear(x, wq, bq -> q); linear(x, wk, bk -> k); linear(x, wv, bv -> v). */
  enum gptoss_status (*linear_qkv)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                                   gptoss_backend_weight_t wq, gptoss_backend_weight_t bq,
                                   gptoss_backend_weight_t wk, gptoss_backend_weight_t bk,
                                   gptoss_backend_weight_t wv, gptoss_backend_weight_t bv,
                                   size_t n_tokens, size_t n_in, size_t q_dim, size_t kv_dim,
                                   gptoss_backend_buffer_t q, gptoss_backend_buffer_t k,
                                   gptoss_backend_buffer_t v);
  /* = add(x, y); rmsnorm(x -> out): x keeps the sum. */
  enum gptoss_status (*add_rmsnorm)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t x,
                                    gptoss_backend_buffer_t y, gptoss_backend_weight_t scale,
                                    size_t n_tokens, size_t dim, float eps,
                                    gptoss_backend_buffer_t out);
  /* = rope(q, n_heads); rope(k, kv heads); kv_write(k, v): q is rotated in place and the cache
   * gets rotated k and v; k's own contents afterwards are unspecified. */
  enum gptoss_status (*rope_kv_write)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t q,
                                      gptoss_backend_buffer_t k, gptoss_backend_buffer_t v,
                                      gptoss_backend_buffer_t positions, size_t n_tokens,
                                      size_t n_heads, const struct gptoss_rope_params* params,
                                      gptoss_backend_kv_t kv, uint32_t layer,
                                      gptoss_backend_buffer_t slots);

  /* -- Sampling on the device: OPTIONAL (NULL: the core reads the logits and samples on the
   *    host, as it also does when the host sampler needs them, e.g. for penalties). -- */
  /* For each row r < shape->n_rows of logits (f32 [n_rows, vocab]) with rows[r] (struct
   * gptoss_sample_row) writes results[r] (struct gptoss_sample_result). `mask` is NULL or
   * uint32 [n_rows, (vocab + 31) / 32]: bit i % 32 of word i / 32 set = token i allowed.
   * The algorithm, which the host sampler also follows:
   *  1. l[i] = logits[i]; NaN and disallowed tokens become -infinity. No allowed token:
   *     token = UINT32_MAX, logprob = -infinity, n_top = 0; done.
   *  2. temperature 0: the lowest-index allowed token with the largest l.
   *  3. Otherwise, in double: if no truncation applies (top_k 0 or >= vocab, top_p 1,
   *     min_p 0), w[i] = exp((l[i] - max l) / temperature) in index order; else the
   *     candidates are the tokens ordered by (l descending, index ascending), cut to the
   *     first top_k when 0 < top_k < vocab, w their exp((l - max l) / temperature) divided by
   *     the sum over the candidates; min_p keeps the leading candidates with w >= min_p * w[0]
   *     (at least one); top_p keeps the shortest leading run whose w sum reaches top_p.
   *     Then r = uniform * (sum of the kept w), and the token is the first kept one (in that
   *     order) at which r minus the running sum of w drops below 0, else the last kept one
   *     with w > 0. Sums may be taken in any order: a backend agrees with the host token for
   *     token except where the draw lies within rounding of a boundary.
   *  4. logprob (token and alternatives): log-softmax at temperature 1 of l, in double.
   *     top: the top_n allowed tokens by (l descending, index ascending). */
  enum gptoss_status (*sample)(gptoss_backend_stream_t stream, gptoss_backend_buffer_t logits,
                               gptoss_backend_buffer_t rows, gptoss_backend_buffer_t mask,
                               const struct gptoss_sample_shape* shape,
                               gptoss_backend_buffer_t results);

  /* ---- ABI 2.1 ---------------------------------------------------------------------- */
  /* OPTIONAL (NULL: nothing guaranteed, no kernel variant named). What results on `dev`
   * guarantee at the precision device_set_precision gave it (the core asks after that, once):
   * fills the fields of `out` below out->struct_size. The core reports it to applications
   * (gptoss_model_info.batch_invariant, .kernels). */
  enum gptoss_status (*device_properties)(gptoss_backend_device_t dev,
                                          struct gptoss_backend_device_properties* out);
};

typedef uint32_t (*gptoss_backend_score_fn)(void);
typedef const char* (*gptoss_backend_unavailable_reason_fn)(void);
typedef enum gptoss_status (*gptoss_backend_init_fn)(const struct gptoss_host_api* host,
                                                     const struct gptoss_backend_api** api_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPTOSS_BACKEND_H_ */
