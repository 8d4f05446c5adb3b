/*
 * libgptoss — inference for OpenAI's gpt-oss models behind a small, stable C ABI.
 *
 * This is the one header applications include. It is plain C99 and also valid C++.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *  - Enums taken as arguments end in a *_max_enum_ member so that any int a C caller passes is
 *    a valid value of the type; unknown values are rejected with invalid_argument.
 *  - Every call returns enum gptoss_status. On failure a thread-local message says why:
 *    gptoss_get_last_error_message(). On failure, out-parameters are left untouched.
 *  - Handles are reference counted: *_create gives a handle with one reference, *_retain adds
 *    one, *_release drops one and frees the object at zero. *_release(NULL) is a no-op that
 *    returns gptoss_status_success. A context retains its model, so releasing the model while
 *    contexts live is fine.
 *  - Strings are UTF-8. Strings returned through `const char**` are owned by the object they
 *    came from and live until that object is released or the next call on it that says so.
 *  - Counts and sizes are size_t. Options structs begin with `size_t struct_size`; fill them
 *    with the matching *_init() macro, then change fields: gptoss_x_init(&o) is
 *    gptoss_x_init_sized(&o, sizeof o), which writes the defaults of the fields your struct
 *    holds and nothing beyond it (the plain gptoss_x_init symbol, for programs built against
 *    0.2, writes the 0.2 struct). _sized returns invalid_argument on NULL or a size below the
 *    struct's first version. New fields are only appended, the first of each version marked
 *    `since 0.x (N bytes)`: libraries before 0.x do not know that field and those after it,
 *    and N (64-bit) is the struct_size that covers them (docs/abi.md's table, checked with
 *    these markers by tests/api/abi_doc_test.cpp); unmarked fields are the first version's,
 *    and every struct with a struct_size (options the caller passes, info the library fills)
 *    follows one rule: a struct_size of any published version of the struct is accepted — the
 *    library reads or writes the fields it covers and defaults the rest (so a program built
 *    against an older or newer gptoss.h keeps working) — and one smaller than the struct's
 *    first version is invalid_argument.
 *  - Thread safety: gptoss_model_t and gptoss_tokenizer_t are immutable and may be used from
 *    any number of threads at once. gptoss_context_t, gptoss_sampler_t, gptoss_kvcache_t and
 *    gptoss_harmony_parser_t must be used by one thread at a time (contexts sharing a kvcache
 *    count as using it). Retain/release are thread safe for every handle.
 */
#ifndef GPTOSS_H_
#define GPTOSS_H_

#include <stddef.h>
#include <stdint.h>

/* GPTOSS_VERSION_MAJOR, _MINOR, _PATCH, _STRING and GPTOSS_ABI_VERSION (generated). */
#include "gptoss/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GPTOSS_API __declspec(dllexport)
#elif defined(__GNUC__)
#define GPTOSS_API __attribute__((visibility("default")))
#else
#define GPTOSS_API
#endif

/* ------------------------------------------------------------------------------------------ */
/* Status codes (values never change)                                                         */

enum gptoss_status {
  gptoss_status_success = 0,
  gptoss_status_invalid_argument = 1,     /* NULL where a value is needed, out-of-range value */
  gptoss_status_unsupported_argument = 2, /* valid but not supported (e.g. a dtype)           */
  gptoss_status_invalid_state = 3,        /* call not allowed now (e.g. logits before process) */
  gptoss_status_io = 4,                   /* file missing, unreadable, corrupt or truncated    */
  gptoss_status_insufficient_memory = 5,  /* allocation failed                                 */
  gptoss_status_insufficient_resources = 6, /* no pages left in a KV cache, no backend device  */
  gptoss_status_unsupported_system = 7,   /* no usable backend on this machine                 */
  gptoss_status_context_overflow = 8,     /* tokens beyond the context length                  */
  gptoss_status_buffer_too_small = 9,     /* output capacity too small; *n_out says the size   */
  gptoss_status_internal = 10             /* a bug: please report it with the message          */
};
typedef enum gptoss_status gptoss_status;

/* Name of a status ("success", "invalid_argument", ...). Never NULL; static storage. */
GPTOSS_API const char* gptoss_status_to_string(enum gptoss_status status);

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * failing call on this thread. Never NULL. */
GPTOSS_API const char* gptoss_get_last_error_message(void);

/* "MAJOR.MINOR.PATCH" of the library running, which may be newer than the
 * GPTOSS_VERSION_STRING the program was compiled with. Never NULL; static storage. */
GPTOSS_API const char* gptoss_get_version(void);

/* ------------------------------------------------------------------------------------------ */
/* Logging. The library is silent until a callback is installed. The callback may be called
 * from any thread, concurrently; it must not call back into libgptoss.                       */

enum gptoss_log_level {
  gptoss_log_level_trace = 0,
  gptoss_log_level_debug = 1,
  gptoss_log_level_info = 2,
  gptoss_log_level_warning = 3,
  gptoss_log_level_error = 4,
  gptoss_log_level_off = 6,
  gptoss_log_level_max_enum_ = 0x7fffffff /* not a level: keeps every int value valid */
};

typedef void (*gptoss_log_callback_t)(enum gptoss_log_level level, const char* message,
                                      void* user_data);

/* Installs `callback` (NULL uninstalls: silence) for messages at `min_level` or above.
 * Returns gptoss_status_success, or invalid_argument for an unknown level. */
GPTOSS_API enum gptoss_status gptoss_set_log_callback(gptoss_log_callback_t callback,
                                                      enum gptoss_log_level min_level,
                                                      void* user_data);

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                    */

typedef struct gptoss_model* gptoss_model_t;
typedef struct gptoss_tokenizer* gptoss_tokenizer_t;
typedef struct gptoss_kvcache* gptoss_kvcache_t;
typedef struct gptoss_context* gptoss_context_t;
typedef struct gptoss_sampler* gptoss_sampler_t;
typedef struct gptoss_harmony_parser* gptoss_harmony_parser_t;

/* ------------------------------------------------------------------------------------------ */
/* Tokenizer (o200k_harmony byte-level BPE)                                                   */

enum gptoss_special_token {
  gptoss_special_token_invalid = 0,
  gptoss_special_token_return = 1,      /* <|return|>     200002 */
  gptoss_special_token_start = 2,       /* <|start|>      200006 */
  gptoss_special_token_message = 3,     /* <|message|>    200008 */
  gptoss_special_token_end = 4,         /* <|end|>        200007 */
  gptoss_special_token_refusal = 5,     /* not in o200k_harmony: always invalid_argument */
  gptoss_special_token_constrain = 6,   /* <|constrain|>  200003 */
  gptoss_special_token_channel = 7,     /* <|channel|>    200005 */
  gptoss_special_token_call = 8,        /* <|call|>       200012 */
  gptoss_special_token_untrusted = 9,   /* not in o200k_harmony: always invalid_argument */
  gptoss_special_token_end_untrusted = 10, /* not in o200k_harmony: invalid_argument */
  gptoss_special_token_startoftext = 11,   /* <|startoftext|> 199998 */
  gptoss_special_token_endoftext = 12,     /* <|endoftext|>   199999 */
  gptoss_special_token_endofprompt = 13,   /* <|endofprompt|> 200018 */
  gptoss_special_token_max_enum_ = 0x7fffffff /* not a token: keeps every int value valid */
};

/* Flags of gptoss_tokenizer_encode. */
#define GPTOSS_ENCODE_ALLOW_SPECIAL 1u /* special-token strings (<|start|>...) become their ids; \
                                          without it they are encoded as ordinary text */

/* Loads a tokenizer from a Hugging Face tokenizer.json (the gpt-oss one). The o200k_harmony
 * special tokens, including every <|reserved_N|> up to 201087, are always present.
 * Returns io (missing/corrupt file), invalid_argument (NULL path/out). */
GPTOSS_API enum gptoss_status gptoss_tokenizer_create_from_file(const char* path,
                                                                gptoss_tokenizer_t* tokenizer_out);
GPTOSS_API enum gptoss_status gptoss_tokenizer_retain(gptoss_tokenizer_t tokenizer);
GPTOSS_API enum gptoss_status gptoss_tokenizer_release(gptoss_tokenizer_t tokenizer);

/* Encodes `text_size` bytes of UTF-8 `text`. Writes at most `capacity` ids to `tokens_out`
 * and the full count to *n_tokens_out. If capacity is too small returns buffer_too_small with
 * *n_tokens_out = the count needed (call again with that capacity; tokens_out may be NULL when
 * capacity is 0). Invalid UTF-8 is encoded byte by byte, never rejected. */
GPTOSS_API enum gptoss_status gptoss_tokenizer_encode(gptoss_tokenizer_t tokenizer,
                                                      const char* text, size_t text_size,
                                                      uint32_t flags, uint32_t* tokens_out,
                                                      size_t capacity, size_t* n_tokens_out);

/* Bytes of one token (a token may end inside a UTF-8 character). *token_ptr_out points into
 * the tokenizer and is valid while the tokenizer lives; not NUL-terminated.
 * invalid_argument for an id outside the vocabulary. */
GPTOSS_API enum gptoss_status gptoss_tokenizer_decode(gptoss_tokenizer_t tokenizer,
                                                      uint32_t token_id,
                                                      const void** token_ptr_out,
                                                      size_t* token_size_out);

/* Bytes of a token sequence into `text_out` (not NUL-terminated; same capacity protocol as
 * gptoss_tokenizer_encode, in bytes). Special tokens decode to their strings. */
GPTOSS_API enum gptoss_status gptoss_tokenizer_decode_tokens(gptoss_tokenizer_t tokenizer,
                                                             const uint32_t* tokens,
                                                             size_t n_tokens, char* text_out,
                                                             size_t capacity,
                                                             size_t* text_size_out);

/* Id of a special token. invalid_argument if `type` has no id in this vocabulary. */
GPTOSS_API enum gptoss_status gptoss_tokenizer_get_special_token_id(
    gptoss_tokenizer_t tokenizer, enum gptoss_special_token type, uint32_t* token_id_out);

/* Id of a special token by its string ("<|start|>", "<|reserved_200100|>"...). */
GPTOSS_API enum gptoss_status gptoss_tokenizer_lookup_special(gptoss_tokenizer_t tokenizer,
                                                              const char* name,
                                                              uint32_t* token_id_out);

/* Ordinary (mergeable) tokens: ids 0..n-1 (199998 for o200k_harmony). */
GPTOSS_API enum gptoss_status gptoss_tokenizer_get_num_text_tokens(gptoss_tokenizer_t tokenizer,
                                                                   size_t* n_out);
/* Special tokens: ids n_text..n_text+n-1 (1090 for o200k_harmony). */
GPTOSS_API enum gptoss_status gptoss_tokenizer_get_num_special_tokens(
    gptoss_tokenizer_t tokenizer, size_t* n_out);
/* All tokens (201088 for o200k_harmony; equals the model's vocabulary rows). */
GPTOSS_API enum gptoss_status gptoss_tokenizer_get_num_tokens(gptoss_tokenizer_t tokenizer,
                                                              size_t* n_out);

/* ------------------------------------------------------------------------------------------ */
/* Model                                                                                      */

enum gptoss_kv_dtype {
  gptoss_kv_dtype_f32 = 0, /* exact; the conformance tolerance applies to it */
  gptoss_kv_dtype_bf16 = 1, /* half the memory */
  gptoss_kv_dtype_max_enum_ = 0x7fffffff /* not a dtype: keeps every int value valid */
};

/* How matmuls treat activations. Weights are never changed. */
enum gptoss_precision {
  gptoss_precision_fast = 0,  /* default: the backend may quantize activations where that is
                                 faster (CPU: int8 per 32-block against MXFP4 experts on CPUs
                                 with AVX2 or AVX-512, as llama.cpp does; over a bf16 KV cache,
                                 attention queries and probabilities rounded to bf16 for bf16
                                 dot products on CPUs with AVX512-BF16); logits then differ
                                 from the float64 reference by about as much as llama.cpp's */
  gptoss_precision_exact = 1, /* fp32 activations and accumulation everywhere */
  gptoss_precision_max_enum_ = 0x7fffffff /* not a precision: keeps every int value valid */
};

/* How a model uses the devices of its backend (gptoss_model_options.split_mode). */
enum gptoss_split_mode {
  gptoss_split_mode_layer = 0,  /* default: consecutive layer ranges over every device of the
                                   backend (their KV cache with them); activations cross at the
                                   range boundaries. One device: the whole model on it */
  gptoss_split_mode_none = 1,   /* only the device named by options.device */
  gptoss_split_mode_expert = 2, /* expert parallelism: each device holds a share of every
                                   layer's experts; attention, router, embedding and output stay
                                   on device 0 */
  gptoss_split_mode_max_enum_ = 0x7fffffff /* not a mode: keeps every int value valid */
};

struct gptoss_model_options {
  size_t struct_size;     /* sizeof(struct gptoss_model_options) */
  const char* backend;    /* "auto" (default), "cpu", "cuda", "hip" */
  int32_t device;         /* device index within the backend; default 0 (the one device used
                             with gptoss_split_mode_none) */
  uint32_t num_threads;   /* CPU threads; 0 = all cores (default) */
  uint32_t num_layers;    /* use only the first N transformer layers (debugging, partial
                             models); 0 = all (default) */
  int32_t use_mmap;       /* 1 = memory-map weight files (default), 0 = read them */
  const char* tokenizer_path; /* tokenizer.json to use instead of the one beside the model
                                 (HF) or in its metadata (GGUF); NULL = default */
  /* since 0.1 (48 bytes) */
  enum gptoss_precision precision; /* default gptoss_precision_fast */
  /* since 0.2 (48 bytes: in the tail padding) */
  enum gptoss_split_mode split_mode; /* default gptoss_split_mode_layer; with one device (the
                                        CPU backend unless GPTOSS_CPU_DEVICES=N) all modes are
                                        the same */
};

/* Fills defaults. Returns invalid_argument on NULL. */
GPTOSS_API enum gptoss_status gptoss_model_options_init_sized(
    struct gptoss_model_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_model_options_init)(struct gptoss_model_options* options);
#define gptoss_model_options_init(options) \
  gptoss_model_options_init_sized((options), sizeof(*(options)))

/* Loads a model: `path` is a Hugging Face directory (config.json, model*.safetensors [with
 * model.safetensors.index.json], tokenizer.json) or a .gguf file from llama.cpp's converter.
 * Returns io (missing/corrupt/truncated files), unsupported_argument (unknown architecture,
 * unsupported dtype), invalid_argument (NULL, bad options, inconsistent config),
 * unsupported_system (no usable backend), insufficient_memory. On failure *model_out is left
 * untouched. */
GPTOSS_API enum gptoss_status gptoss_model_create_from_file(const char* path,
                                                            gptoss_model_t* model_out);
GPTOSS_API enum gptoss_status gptoss_model_create_with_options(
    const char* path, const struct gptoss_model_options* options, gptoss_model_t* model_out);
GPTOSS_API enum gptoss_status gptoss_model_retain(gptoss_model_t model);
GPTOSS_API enum gptoss_status gptoss_model_release(gptoss_model_t model);

/* The model's tokenizer, retained: release it when done. */
GPTOSS_API enum gptoss_status gptoss_model_get_tokenizer(gptoss_model_t model,
                                                         gptoss_tokenizer_t* tokenizer_out);
/* Longest context the model supports (config max_position_embeddings, 131072 for gpt-oss). */
GPTOSS_API enum gptoss_status gptoss_model_get_max_context_length(gptoss_model_t model,
                                                                  size_t* n_out);

struct gptoss_model_info {
  size_t struct_size;           /* set by the caller: sizeof(struct gptoss_model_info) */
  size_t vocab_size;            /* rows of the (un)embedding: 201088 */
  size_t num_layers;            /* layers in use (after options.num_layers) */
  size_t num_layers_total;      /* layers in the checkpoint */
  size_t hidden_size;           /* 2880 for gpt-oss */
  size_t num_heads;             /* query heads: 64 */
  size_t num_kv_heads;          /* 8 */
  size_t head_dim;              /* 64 */
  size_t num_experts;           /* 32 (20b) or 128 (120b) */
  size_t num_active_experts;    /* 4 */
  size_t intermediate_size;     /* per expert: 2880 */
  size_t sliding_window;        /* 128 */
  size_t max_context_length;    /* 131072 */
  size_t num_parameters;        /* total parameter count */
  const char* backend;          /* name of the backend in use ("cpu"...); model-owned */
  const char* format;           /* "safetensors" or "gguf"; model-owned */
  /* since 0.1 (136 bytes) */
  /* Bytes of weights one decode step (one token) reads, as the checkpoint stores them: every
   * dense tensor, num_active_experts of each layer's experts, one embedding row; the KV cache
   * comes on top (gptoss_model_get_kv_bytes_per_token). Decode speed is bounded by memory
   * bandwidth / this. */
  size_t decode_weight_bytes;
  /* since 0.3 (152 bytes) */
  /* 1 when a sequence's logits, hence its sampled tokens and logprobs for a given sampler seed,
   * are bit for bit the same whatever other contexts are processed with it
   * (gptoss_contexts_process), however its tokens were split into calls (chunked prefill), and
   * whether its earlier tokens' KV came from an earlier call (gptoss_context_truncate reuse):
   * every device the model uses declares it at the model's precision. 0 when the backend does
   * not declare it (the results then agree to float rounding). */
  int32_t batch_invariant;
  /* The backend's kernel variant(s) in use ("avx512", "scalar"; devices with different ones
   * joined by ","); "" when the backend names none. Model-owned. */
  const char* kernels;
};
/* Fills the fields of `info` that info->struct_size covers (older callers get fewer fields;
 * struct_size itself is left as set). invalid_argument for NULL or a struct_size below the
 * first version's (128 bytes on 64-bit systems). */
GPTOSS_API enum gptoss_status gptoss_model_get_info(gptoss_model_t model,
                                                    struct gptoss_model_info* info);

/* ------------------------------------------------------------------------------------------ */
/* KV cache: a pool of pages that several contexts of one model share.
 *
 * Memory: pages of GPTOSS_KV_PAGE_SIZE tokens. Full-attention layers (half of the layers)
 * keep every token: bytes per token = n_full_layers * 2 (K and V) * num_kv_heads * head_dim *
 * sizeof(dtype) — for gpt-oss-20b (12 full layers, 8 KV heads of 64) 49152 bytes (48 KiB)
 * in f32, 24 KiB in bf16; for 120b (18 full layers) 72 KiB / 36 KiB. Sliding-window layers
 * keep only the last 128 positions (plus one prefill chunk) per sequence, a constant per
 * context. */
#define GPTOSS_KV_PAGE_SIZE 16

struct gptoss_kvcache_options {
  size_t struct_size;          /* sizeof(struct gptoss_kvcache_options) */
  size_t capacity_tokens;      /* tokens of full-attention KV across all contexts (required).
                                * A context holds whole pages: contexts of lengths L1..Ln fit
                                * when the sum of each Li rounded up to GPTOSS_KV_PAGE_SIZE is
                                * at most this. */
  size_t max_sequences;        /* contexts that may hold pages at once; default 8 */
  enum gptoss_kv_dtype dtype;  /* default f32 */
};
GPTOSS_API enum gptoss_status gptoss_kvcache_options_init_sized(
    struct gptoss_kvcache_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_kvcache_options_init)(struct gptoss_kvcache_options* options);
#define gptoss_kvcache_options_init(options) \
  gptoss_kvcache_options_init_sized((options), sizeof(*(options)))

/* Creates a pool. invalid_argument for NULL options (capacity_tokens is required), capacity 0,
 * max_sequences 0 or an unknown dtype; insufficient_memory. */
GPTOSS_API enum gptoss_status gptoss_kvcache_create(gptoss_model_t model,
                                                    const struct gptoss_kvcache_options* options,
                                                    gptoss_kvcache_t* kvcache_out);
GPTOSS_API enum gptoss_status gptoss_kvcache_retain(gptoss_kvcache_t kvcache);
GPTOSS_API enum gptoss_status gptoss_kvcache_release(gptoss_kvcache_t kvcache);
/* Tokens of free capacity left in the pool. */
GPTOSS_API enum gptoss_status gptoss_kvcache_get_free_tokens(gptoss_kvcache_t kvcache,
                                                             size_t* n_out);
/* Bytes of KV memory per token of context (full-attention layers), for sizing. */
GPTOSS_API enum gptoss_status gptoss_model_get_kv_bytes_per_token(gptoss_model_t model,
                                                                  enum gptoss_kv_dtype dtype,
                                                                  size_t* bytes_out);

/* ------------------------------------------------------------------------------------------ */
/* Context: one sequence of tokens and its KV state.                                          */

/* Creates a context with a private KV pool of `context_length` tokens (0 = the model's
 * maximum). f32 KV. */
GPTOSS_API enum gptoss_status gptoss_context_create(gptoss_model_t model, size_t context_length,
                                                    gptoss_context_t* context_out);

struct gptoss_context_options {
  size_t struct_size;          /* sizeof(struct gptoss_context_options) */
  size_t context_length;       /* max tokens in this context; 0 = model maximum */
  gptoss_kvcache_t kvcache;    /* shared pool to draw pages from; NULL = a private pool */
  enum gptoss_kv_dtype kv_dtype; /* for a private pool; default f32 */
  size_t max_batch_tokens;     /* tokens per forward step when processing; default 512 */
};
GPTOSS_API enum gptoss_status gptoss_context_options_init_sized(
    struct gptoss_context_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_context_options_init)(struct gptoss_context_options* options);
#define gptoss_context_options_init(options) \
  gptoss_context_options_init_sized((options), sizeof(*(options)))
GPTOSS_API enum gptoss_status gptoss_context_create_with_options(
    gptoss_model_t model, const struct gptoss_context_options* options,
    gptoss_context_t* context_out);
GPTOSS_API enum gptoss_status gptoss_context_retain(gptoss_context_t context);
GPTOSS_API enum gptoss_status gptoss_context_release(gptoss_context_t context);

/* Appends tokens (not yet processed). context_overflow if the total would exceed the
 * context length (nothing is appended then); invalid_argument for an id >= vocabulary. */
GPTOSS_API enum gptoss_status gptoss_context_append_tokens(gptoss_context_t context,
                                                           size_t n_tokens,
                                                           const uint32_t* tokens);
/* Encodes `text` (special tokens allowed) and appends it. */
GPTOSS_API enum gptoss_status gptoss_context_append_chars(gptoss_context_t context,
                                                          const char* text, size_t text_size,
                                                          size_t* n_tokens_out);
/* Runs the forward pass over every appended, unprocessed token (in chunks of
 * max_batch_tokens). Afterwards logits of the last token are available.
 * insufficient_resources when a shared pool has no free pages (the context is unchanged). */
GPTOSS_API enum gptoss_status gptoss_context_process(gptoss_context_t context);

/* Processes several contexts of the same model in batched forward steps: contexts that draw on
 * one KV pool (gptoss_kvcache_create) share each step, so every weight is read once for all of
 * them; contexts with private pools are processed one pool after another. The result equals
 * processing each alone: on the CPU backend bit for bit, at every kernel level and in both
 * precisions, as it does not depend on how a prompt is chunked either (docs/architecture.md,
 * "Determinism"). invalid_argument if they do not share one model or the same context appears
 * twice. */
GPTOSS_API enum gptoss_status gptoss_contexts_process(gptoss_context_t* contexts,
                                                      size_t n_contexts);

/* Copies the logits of the last processed token (vocab_size floats).
 * invalid_state if no token has been processed since the last append/reset;
 * buffer_too_small if capacity < vocab_size (*n_out = vocab_size). */
GPTOSS_API enum gptoss_status gptoss_context_get_logits(gptoss_context_t context, float* out,
                                                        size_t capacity, size_t* n_out);
/* Tokens in the context (processed or not). */
GPTOSS_API enum gptoss_status gptoss_context_get_num_tokens(gptoss_context_t context,
                                                            size_t* n_out);
GPTOSS_API enum gptoss_status gptoss_context_get_num_processed_tokens(gptoss_context_t context,
                                                                      size_t* n_out);
/* Copies the tokens (same capacity protocol as gptoss_tokenizer_encode). */
GPTOSS_API enum gptoss_status gptoss_context_get_tokens(gptoss_context_t context,
                                                        uint32_t* tokens_out, size_t capacity,
                                                        size_t* n_out);
GPTOSS_API enum gptoss_status gptoss_context_get_max_tokens(gptoss_context_t context,
                                                            size_t* n_out);
/* Drops every token and frees its KV pages. */
GPTOSS_API enum gptoss_status gptoss_context_reset(gptoss_context_t context);
/* Keeps the first n tokens (n <= num_tokens), so a shared prefix need not be recomputed.
 * KV of the kept processed tokens stays valid. */
GPTOSS_API enum gptoss_status gptoss_context_truncate(gptoss_context_t context, size_t n_tokens);

/* ------------------------------------------------------------------------------------------ */
/* Sampler                                                                                    */

struct gptoss_sampler_options {
  size_t struct_size;        /* sizeof(struct gptoss_sampler_options) */
  float temperature;         /* 0 = greedy (argmax); default 1.0; must be >= 0 */
  uint32_t top_k;            /* 0 = off (default) */
  float top_p;               /* 1.0 = off (default); in (0, 1] */
  float min_p;               /* 0 = off (default); in [0, 1) */
  float repetition_penalty;  /* 1.0 = off (default); > 0; divides positive logits */
  float presence_penalty;    /* 0 = off (default) */
  float frequency_penalty;   /* 0 = off (default) */
  uint32_t penalty_window;   /* last N tokens of the context the penalties see; default 64 */
  uint64_t seed;             /* same seed, same logits => same tokens; default 0 */
  uint32_t top_logprobs;     /* alternatives to report with each sample (0..20); default 0 */
};
GPTOSS_API enum gptoss_status gptoss_sampler_options_init_sized(
    struct gptoss_sampler_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_sampler_options_init)(struct gptoss_sampler_options* options);
#define gptoss_sampler_options_init(options) \
  gptoss_sampler_options_init_sized((options), sizeof(*(options)))

/* invalid_argument for an out-of-range field (message names it). */
GPTOSS_API enum gptoss_status gptoss_sampler_create(const struct gptoss_sampler_options* options,
                                                    gptoss_sampler_t* sampler_out);
GPTOSS_API enum gptoss_status gptoss_sampler_retain(gptoss_sampler_t sampler);
GPTOSS_API enum gptoss_status gptoss_sampler_release(gptoss_sampler_t sampler);
/* Restarts the RNG from `seed`. */
GPTOSS_API enum gptoss_status gptoss_sampler_reseed(gptoss_sampler_t sampler, uint64_t seed);

/* Samples the next token from the context's last logits (processing pending tokens first).
 * Does not append it. */
GPTOSS_API enum gptoss_status gptoss_context_sample(gptoss_context_t context,
                                                    gptoss_sampler_t sampler,
                                                    uint32_t* token_out);

struct gptoss_token_logprob {
  uint32_t token;
  float logprob; /* natural log of the probability under the full (temperature-1) softmax */
};
/* Log-probability of the last sampled token and the top alternatives
 * (options.top_logprobs of them, most likely first) into `alternatives` (capacity entries).
 * invalid_state before the first sample. */
GPTOSS_API enum gptoss_status gptoss_sampler_get_last_logprobs(
    gptoss_sampler_t sampler, struct gptoss_token_logprob* chosen,
    struct gptoss_token_logprob* alternatives, size_t capacity, size_t* n_out);

/* ------------------------------------------------------------------------------------------ */
/* Harmony (the gpt-oss chat format). Conversations and messages are JSON, UTF-8.
 *
 * Conversation JSON: {"messages": [Message, ...]} or a bare array of Message.
 * Message: {"role": "system"|"developer"|"user"|"assistant"|"tool",
 *           "name": string?, "recipient": string?, "channel": string?,
 *           "content_type": string?, "content": string | [ContentPart, ...]}
 *   "name" is required for "tool" (the tool's name, e.g. "functions.get_weather").
 * ContentPart: {"type":"text","text":...}
 *            | {"type":"system_content","model_identity"?,"reasoning_effort"?:"low|medium|high",
 *               "conversation_start_date"?,"knowledge_cutoff"?,
 *               "channel_config"?:{"valid_channels":[...],"channel_required"?:bool},
 *               "tools"?:{"browser"|"python"|...: Namespace}}      (system messages only)
 *            | {"type":"developer_content","instructions"?, "tools"?:{"functions":Namespace},
 *               "response_formats"?: [{"name","description"?,"schema"}]}  (developer only)
 * Namespace: {"name"?,"description"?,"tools"?:[{"name","description"?,"parameters"?:JSONSchema}]}
 * "?" = optional; a missing field or null means "not set" (no library defaults are filled
 * in: a system_content without "reasoning_effort" renders no "Reasoning:" line). Unknown
 * fields are rejected. Exact schema and rendering rules: docs/harmony.md. */

struct gptoss_harmony_render_options {
  size_t struct_size;         /* sizeof(struct gptoss_harmony_render_options) */
  int32_t for_completion;     /* 1 (default): end with <|start|>assistant */
  int32_t auto_drop_analysis; /* 1 (default): if the last assistant message is on "final",
                                 drop "analysis" messages before the first "final" one */
};
GPTOSS_API enum gptoss_status gptoss_harmony_render_options_init_sized(
    struct gptoss_harmony_render_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_harmony_render_options_init)(struct gptoss_harmony_render_options* options);
#define gptoss_harmony_render_options_init(options) \
  gptoss_harmony_render_options_init_sized((options), sizeof(*(options)))

/* Renders a conversation to tokens (capacity protocol as gptoss_tokenizer_encode).
 * `options` may be NULL (defaults). Returns success; buffer_too_small (*n_tokens_out = the
 * count needed); invalid_argument for NULL tokenizer/conversation_json/n_tokens_out, NULL
 * tokens_out with capacity > 0, options->struct_size too small, or malformed JSON / unknown role /
 * wrong field types (the message names the field, e.g. "messages[1].role: ..."). */
GPTOSS_API enum gptoss_status gptoss_harmony_render(
    gptoss_tokenizer_t tokenizer, const char* conversation_json,
    const struct gptoss_harmony_render_options* options, uint32_t* tokens_out, size_t capacity,
    size_t* n_tokens_out);

/* Streaming parser of model output. `strict` = 1 makes malformed input an error
 * (invalid_argument from process_token / finish); 0 is tolerant and never fails on model
 * output, keeping all its text. `first_role` is the role of the first message when generation
 * started right after "<|start|>assistant" (usually "assistant"), or NULL when the stream
 * begins with <|start|>. The parser retains the tokenizer.
 * create returns success or invalid_argument (NULL tokenizer/parser_out, unknown first_role;
 * *parser_out untouched). */
GPTOSS_API enum gptoss_status gptoss_harmony_parser_create(gptoss_tokenizer_t tokenizer,
                                                           const char* first_role, int32_t strict,
                                                           gptoss_harmony_parser_t* parser_out);
GPTOSS_API enum gptoss_status gptoss_harmony_parser_release(gptoss_harmony_parser_t parser);

/* Feeds one token (any uint32_t; ids outside the vocabulary become U+FFFD in content).
 * Returns success; invalid_argument (NULL parser; strict parser and malformed input);
 * invalid_state (a strict parser already failed: create a new one). */
GPTOSS_API enum gptoss_status gptoss_harmony_parser_process_token(gptoss_harmony_parser_t parser,
                                                                  uint32_t token);

struct gptoss_harmony_state {
  size_t struct_size;         /* set by the caller */
  const char* role;           /* of the message in progress; NULL between messages */
  const char* channel;        /* NULL if none */
  const char* recipient;      /* NULL if none */
  const char* content_type;   /* NULL if none */
  const char* content_delta;  /* text produced by the last token (NUL-terminated); "" if none */
  size_t content_delta_size;  /* bytes of content_delta */
  size_t num_messages;        /* completed messages so far */
};
/* The parser's state after the last token. Strings are owned by the parser and valid until
 * the next call on it. Only fields inside state->struct_size are written. Returns success or
 * invalid_argument (NULL argument, struct_size below the first version's: 64 bytes on
 * 64-bit systems). */
GPTOSS_API enum gptoss_status gptoss_harmony_parser_get_current(gptoss_harmony_parser_t parser,
                                                                struct gptoss_harmony_state* state);
/* Ends the stream (closes an open message) and returns every parsed message as a JSON array
 * of Message (all six keys, content always one text part). *json_out is parser-owned and
 * valid until the next call on the parser. Returns success; invalid_argument (NULL argument;
 * strict parser with the stream ending inside a header); invalid_state (failed earlier). */
GPTOSS_API enum gptoss_status gptoss_harmony_parser_finish(gptoss_harmony_parser_t parser,
                                                           const char** json_out);
/* The completed messages so far as JSON, without ending the stream. Returns success or
 * invalid_argument (NULL argument). */
GPTOSS_API enum gptoss_status gptoss_harmony_parser_get_messages(gptoss_harmony_parser_t parser,
                                                                 const char** json_out);

/* ------------------------------------------------------------------------------------------ */
/* Context checkpoints: cheap truncation back to a chosen position (prefix reuse across turns).
 *
 * Sliding-window layers keep only the KV of the last sliding_window (128) positions, so after
 * a context has grown well past position p, gptoss_context_truncate(context, p) finds the
 * window before p gone and recomputes the whole prefix. A server that keeps a finished
 * conversation's context for its next turn truncates back to where the new prompt diverges
 * (usually just after the previous prompt, since the answer is rendered differently in
 * history): a checkpoint at the end of that prompt keeps the window there. */

/* Keeps the sliding-window KV of the window before `position` while the context grows past
 * it. A later gptoss_context_truncate(context, n) with n >= position then resumes at the latest
 * of n - 1 (if the window before it is still held) and `position`; without a checkpoint it
 * resumes at 0 once that window is gone (gptoss_context_get_num_processed_tokens says where it
 * resumed). Costs at most sliding_window / GPTOSS_KV_PAGE_SIZE + 1 pages of the sliding-window
 * group, which every KV pool reserves per sequence. One checkpoint per context: a new call
 * moves it, 0 clears it; gptoss_context_reset and a truncation below it drop it.
 * Returns success; invalid_argument (NULL context, position > number of tokens). */
GPTOSS_API enum gptoss_status gptoss_context_set_checkpoint(gptoss_context_t context,
                                                            size_t position);
/* Constrained decoding: grammars, per-sequence constraints, allowed-token masks, stop strings.
 *
 * A grammar is compiled once (from a JSON Schema, or from a Harmony spec: channels, tools,
 * tool_choice, response format) and is immutable: share it between threads and sequences.
 * A constraint is one sequence's position in a grammar (one thread at a time). Each step it
 * gives the set of tokens that keep the output valid as a bitmask of uint32 words (bit i of
 * word i/32 set = token i allowed, tokens of the tokenizer's whole vocabulary), and it accepts
 * the token that was chosen. A sampler with a constraint attached (gptoss_sampler_set_constraint)
 * does both inside gptoss_context_sample. Guarantee: every token the mask allows keeps the
 * output a prefix of some valid output, and every token it forbids would make it invalid
 * (within the grammar's documented language, docs/constrained-decoding.md); a generation that
 * ends at the grammar's terminating token is valid. Details: docs/constrained-decoding.md.   */

typedef struct gptoss_grammar* gptoss_grammar_t;
typedef struct gptoss_constraint* gptoss_constraint_t;
typedef struct gptoss_stop_strings* gptoss_stop_strings_t;

/* Words of a token mask for a vocabulary of n tokens. */
#define GPTOSS_MASK_WORDS(n) (((n) + 31u) / 32u)

/* Compiles a JSON Schema (UTF-8 JSON text) into a grammar of JSON documents that validate
 * against it: compact JSON (one optional space after ':' and ','), properties in the schema's
 * order, followed by one end token (<|return|>, <|end|>, <|call|> or <|endoftext|>).
 * Supported: type (string or array of types), properties, required, additionalProperties
 * (keys beyond "properties" are never generated; an object without "properties" is a map
 * whose values follow additionalProperties: any object when it is absent), items, minItems,
 * maxItems, enum, const, minimum,
 * maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf (branches must be provably
 * disjoint), allOf with one schema, $ref to "#", "#/$defs/..." or "#/definitions/...",
 * true/false schemas; annotations (title, description, default, examples, $schema, $id,
 * $comment, ...) and unknown non-standard keywords are ignored.
 * Returns success; invalid_argument (NULL argument, malformed JSON, a schema that is not an
 * object or boolean, wrong keyword types, unsatisfiable schemas such as minimum > maximum or
 * recursion without a base case: the message names the JSON pointer);
 * unsupported_argument (a JSON Schema keyword outside the subset, e.g. "pattern", or a schema
 * whose compiled grammar would exceed the size bounds of docs/constrained-decoding.md: the
 * message names the keyword and its JSON pointer). On failure *grammar_out is untouched. */
GPTOSS_API enum gptoss_status gptoss_grammar_create_json_schema(gptoss_tokenizer_t tokenizer,
                                                                const char* schema_json,
                                                                gptoss_grammar_t* grammar_out);

/* Compiles the Harmony structure of an assistant turn. `spec_json` (NULL or "{}" = defaults):
 *   {"channels": ["analysis", "commentary", "final"],            valid channels (default)
 *    "tools": {"functions": Namespace, "browser": Namespace, ...}, the Namespace shape of
 *                                       gptoss_harmony_render; a namespace with tools offers
 *                                       recipients NS.TOOL whose arguments are JSON constrained
 *                                       to the tool's "parameters" ({} when null); one without
 *                                       tools offers the recipient NS with free text (python)
 *    "tool_choice": "auto" | "none" | "required" | {"type": "function", "name": NAME}
 *                   | {"type": "function", "function": {"name": NAME}},  default "auto"
 *    "response_format": {"type": "text"} | {"type": "json_object"}
 *                   | {"type": "json_schema", "schema": SCHEMA}
 *                   | {"type": "json_schema", "json_schema": {"name": ..., "schema": SCHEMA}},
 *                                       the final channel's content (default text)
 *    "start": "header" | "message"}     generation starts right after "<|start|>assistant"
 *                                       (default, what gptoss_harmony_render writes for
 *                                       completion) or before a message's <|start|>
 * The model may then only write messages <|start|>assistant HEADER <|message|> CONTENT END:
 * a channel from "channels"; an optional recipient (" to=NAME" before or after the channel)
 * on any channel but final, from the declared tools (none with tool_choice "none", only NAME
 * when named); a content type "<|constrain|>json" (optionally after a space) or " json" for
 * JSON arguments, " code" for free-text tools; END <|end|> or, after a recipient, <|call|>;
 * the final message (one per turn) ends with <|return|>. tool_choice "required" or named: no
 * final channel, so the turn ends with a call. <|call|> and <|return|> end the turn (the
 * constraint is then finished).
 * Returns success; invalid_argument (NULL tokenizer/grammar_out, malformed spec, unknown
 * fields, a tool_choice naming a tool that is not declared, "required" without tools, tool
 * names with whitespace or '<', bad schemas as gptoss_grammar_create_json_schema: messages
 * start with the path, e.g. "spec_json.tools.functions.tools[0].parameters: ...");
 * unsupported_argument (as gptoss_grammar_create_json_schema). */
GPTOSS_API enum gptoss_status gptoss_grammar_create_harmony(gptoss_tokenizer_t tokenizer,
                                                            const char* spec_json,
                                                            gptoss_grammar_t* grammar_out);
GPTOSS_API enum gptoss_status gptoss_grammar_retain(gptoss_grammar_t grammar);
GPTOSS_API enum gptoss_status gptoss_grammar_release(gptoss_grammar_t grammar);

struct gptoss_constraint_options { /* since 0.2 */
  size_t struct_size;           /* sizeof(struct gptoss_constraint_options) */
  int64_t max_reasoning_tokens; /* Harmony grammars: content tokens the analysis channel may
                                   use in all (< 0, the default: no limit; 0: no analysis).
                                   When reached, the analysis message is closed and the answer
                                   opened: <|end|><|start|>assistant<|channel|>final<|message|>
                                   (a tool-call header instead with tool_choice required or
                                   named), one allowed token at a time. Every message without
                                   recipient that is not the answer counts: analysis and
                                   commentary preambles alike. Ignored by JSON grammars. */
  /* since 0.3 (24 bytes) */
  int64_t max_tokens;           /* Tokens the constraint may accept in all, its terminating
                                   token included (< 0, the default: no limit). When set, the
                                   mask lets through only tokens after which the grammar can
                                   still be completed within what is left, so the output is
                                   complete and valid when the limit is reached: reasoning is
                                   ended, the answer opened, open strings, arrays and objects
                                   closed, required properties given their shortest values.
                                   gptoss_constraint_create refuses a limit below
                                   gptoss_constraint_min_tokens of the grammar's start. Needs a
                                   vocabulary with a token for every single byte (o200k has). */
};
GPTOSS_API enum gptoss_status gptoss_constraint_options_init_sized(
    struct gptoss_constraint_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_constraint_options_init)(struct gptoss_constraint_options* options);
#define gptoss_constraint_options_init(options) \
  gptoss_constraint_options_init_sized((options), sizeof(*(options)))

/* A constraint at the start of `grammar` (which it retains). `options` may be NULL (defaults).
 * Returns success or invalid_argument (NULL grammar/constraint_out, options->struct_size;
 * options->max_tokens below the shortest complete output: the message names that minimum,
 * "max_tokens 12 is below the 31 tokens the shortest complete output takes"; max_tokens set on
 * a grammar that cannot finish, or with a vocabulary lacking single-byte tokens). */
GPTOSS_API enum gptoss_status gptoss_constraint_create(
    gptoss_grammar_t grammar, const struct gptoss_constraint_options* options,
    gptoss_constraint_t* constraint_out);
GPTOSS_API enum gptoss_status gptoss_constraint_retain(gptoss_constraint_t constraint);
GPTOSS_API enum gptoss_status gptoss_constraint_release(gptoss_constraint_t constraint);
/* Back to the start of the grammar (same options). */
GPTOSS_API enum gptoss_status gptoss_constraint_reset(gptoss_constraint_t constraint);

/* Advances by one token. Returns success; invalid_argument if the grammar does not allow the
 * token here (the message names it; the constraint is unchanged) or for a NULL constraint;
 * invalid_state if the constraint is finished. */
GPTOSS_API enum gptoss_status gptoss_constraint_accept_token(gptoss_constraint_t constraint,
                                                             uint32_t token);

/* Writes the mask of tokens allowed next: GPTOSS_MASK_WORDS(vocabulary) words (6284 for
 * o200k_harmony) to `mask_out`, *n_words_out = that count. All zero once finished.
 * Returns success; buffer_too_small (capacity_words too small; *n_words_out = the count);
 * invalid_argument (NULL constraint/n_words_out, NULL mask_out with capacity > 0). */
GPTOSS_API enum gptoss_status gptoss_constraint_fill_mask(gptoss_constraint_t constraint,
                                                          uint32_t* mask_out,
                                                          size_t capacity_words,
                                                          size_t* n_words_out);

/* *finished_out = 1 once the grammar's terminating token was accepted (nothing more is
 * allowed), else 0. */
GPTOSS_API enum gptoss_status gptoss_constraint_is_finished(gptoss_constraint_t constraint,
                                                            int32_t* finished_out);

/* *min_tokens_out = how many tokens the shortest way to finish the grammar from here takes at
 * most (each byte of the shortest completion one token, each special token one: a real
 * tokenization needs as many or fewer); 0 once finished; -1 if the grammar cannot be finished
 * from here (a Harmony spec without a final channel or tools, say). */
GPTOSS_API enum gptoss_status gptoss_constraint_min_tokens(gptoss_constraint_t constraint,
                                                          int64_t* min_tokens_out);

/* *closed_out = 1 once options->max_tokens has forbidden a token the grammar allowed: the
 * output was steered to its shortest completion to finish within the limit. Else 0. */
GPTOSS_API enum gptoss_status gptoss_constraint_closed_by_budget(gptoss_constraint_t constraint,
                                                                int32_t* closed_out);

/* Attaches `constraint` to `sampler` (retained; NULL detaches). While attached,
 * gptoss_context_sample samples only tokens the constraint allows (their logits, after
 * penalties, become -inf: log-probabilities reported by gptoss_sampler_get_last_logprobs are
 * those of the constrained distribution) and accepts the sampled token into the constraint;
 * it returns invalid_state when the constraint is finished. */
GPTOSS_API enum gptoss_status gptoss_sampler_set_constraint(gptoss_sampler_t sampler,
                                                            gptoss_constraint_t constraint);

/* Stop strings over streamed text: text is pushed as it is produced (e.g. the content deltas
 * of the Harmony parser); bytes that may begin a stop string are held back until they are
 * known not to, so a stop string is never emitted, even when it spans tokens. One thread at
 * a time per object.
 * create: `n_stops` NUL-terminated UTF-8 strings (1..64 of them, each 1..1024 bytes).
 * Returns success or invalid_argument (NULL, empty or too many strings). */
GPTOSS_API enum gptoss_status gptoss_stop_strings_create(const char* const* stops, size_t n_stops,
                                                         gptoss_stop_strings_t* stop_strings_out);
GPTOSS_API enum gptoss_status gptoss_stop_strings_release(gptoss_stop_strings_t stop_strings);
/* Appends `text_size` bytes. *emit_out / *emit_size_out: the text now safe to show (owned by
 * the object, valid until its next call; not NUL-terminated). *stop_index_out: the index of
 * the stop string that completed (the text before it has been emitted, the stop string and
 * everything after it never are; later pushes emit nothing), or -1. */
GPTOSS_API enum gptoss_status gptoss_stop_strings_push(gptoss_stop_strings_t stop_strings,
                                                       const char* text, size_t text_size,
                                                       const char** emit_out,
                                                       size_t* emit_size_out,
                                                       int32_t* stop_index_out);
/* End of the stream without a stop: emits whatever was held back. */
GPTOSS_API enum gptoss_status gptoss_stop_strings_flush(gptoss_stop_strings_t stop_strings,
                                                        const char** emit_out,
                                                        size_t* emit_size_out);
/* Forgets held-back text and a match, for a new stream. */
GPTOSS_API enum gptoss_status gptoss_stop_strings_reset(gptoss_stop_strings_t stop_strings);

/* ------------------------------------------------------------------------------------------ */
/* Speculative decoding: several tokens per forward step, the same tokens out.
 *
 * Plain decoding samples one token per forward step (gptoss_context_sample, then append it).
 * gptoss_context_sample_draft takes a run of proposed ("drafted") tokens, processes them in one
 * forward step and samples every position as plain decoding would, keeping the drafted tokens
 * up to the first that differs from what was sampled: the tokens it returns are exactly those
 * that as many rounds of gptoss_context_sample and append would have produced, with the
 * sampler (its RNG, its penalties, its constraint) advanced exactly as those rounds would
 * advance it. With temperature > 0 that is the speculative-sampling rule for a deterministic
 * drafter (a drafted token is kept with the probability the model gives it, otherwise the
 * token comes from the model's distribution without it), and the same seed gives the same
 * tokens with or without drafts. Identical logits are needed for identical tokens: the CPU
 * backend's scalar kernels (GPTOSS_CPU_ISA=scalar) compute one token the same way in any step.
 * A speculator runs the whole loop: it proposes (prompt lookup, a draft model, tokens the
 * constraint forces), verifies, and adapts the draft length. docs/speculative.md.          */

struct gptoss_draft_options {  /* since 0.3 */
  size_t struct_size;          /* sizeof(struct gptoss_draft_options) */
  const uint32_t* stop_tokens; /* a sampled token in this set ends the run (it is returned
                                  last, as any final token); NULL with n_stop_tokens 0 */
  size_t n_stop_tokens;        /* default 0 */
};
GPTOSS_API enum gptoss_status gptoss_draft_options_init_sized(struct gptoss_draft_options* options,
                                                              size_t size);
GPTOSS_API enum gptoss_status(gptoss_draft_options_init)(struct gptoss_draft_options* options);
#define gptoss_draft_options_init(options) \
  gptoss_draft_options_init_sized((options), sizeof(*(options)))

/* Verifies `n_draft` drafted tokens in one forward step (with the pending tokens before them).
 * Writes to tokens_out the tokens plain decoding gives from here: the drafted tokens it agrees
 * with, then one more — the first sampled token that differs from the draft, the token after a
 * draft that was kept whole, a token in options->stop_tokens, or the token that finishes the
 * sampler's constraint, whichever comes first. The kept drafted tokens stay appended to the
 * context (their KV computed); the last token is returned but not appended, as
 * gptoss_context_sample returns it. Drafted tokens the sampler's constraint forbids, and those
 * after them, are dropped before the step. n_draft 0 is gptoss_context_sample. `options` may be
 * NULL (defaults). The context must hold a token; the draft must fit one step (n_draft + 1 <=
 * the context's max_batch_tokens) and the context (n_draft <= its free room).
 * Returns success; invalid_argument (NULL context/sampler/n_tokens_out, NULL draft with
 * n_draft > 0, NULL tokens_out, a drafted id outside the vocabulary — the message names its
 * index —, a draft longer than max_batch_tokens - 1, bad options); buffer_too_small (capacity <
 * n_draft + 1; *n_tokens_out = n_draft + 1; nothing is done); context_overflow (the draft does
 * not fit the context's room); invalid_state (no tokens; a finished constraint);
 * insufficient_resources (no KV pages; the context keeps its tokens). */
GPTOSS_API enum gptoss_status gptoss_context_sample_draft(
    gptoss_context_t context, gptoss_sampler_t sampler, const uint32_t* draft, size_t n_draft,
    const struct gptoss_draft_options* options, uint32_t* tokens_out, size_t capacity,
    size_t* n_tokens_out);

typedef struct gptoss_speculator* gptoss_speculator_t;

struct gptoss_speculator_options { /* since 0.3 */
  size_t struct_size;              /* sizeof(struct gptoss_speculator_options) */
  /* 1 (default): draft the tokens that followed the latest earlier occurrence of the
   * sequence's last 3 (else 2, else 1) tokens. */
  int32_t prompt_lookup;
  /* 1 (default): draft the tokens the sampler's constraint allows alone (always kept). */
  int32_t jump_forward;
  /* NULL (default); else draft with this model's greedy continuation, on a context of its
   * own, instead of prompt lookup (same vocabulary; retained). */
  gptoss_model_t draft_model;
  /* Most drafter tokens per step; default 8; 0 = jump-forward only. */
  uint32_t max_draft;
  /* since 0.3 (32 bytes: in the tail padding) */
  int32_t cost_bound; /* 1 (default): drafts that are not kept cost at most 3 % of plain
                         decoding's time, measured on the speculator's own steps
                         (docs/speculative.md, "The cost bound"); 0: the draft length follows
                         the acceptance alone. */
};
GPTOSS_API enum gptoss_status gptoss_speculator_options_init_sized(
    struct gptoss_speculator_options* options, size_t size);
GPTOSS_API enum gptoss_status(gptoss_speculator_options_init)(
    struct gptoss_speculator_options* options);
#define gptoss_speculator_options_init(options) \
  gptoss_speculator_options_init_sized((options), sizeof(*(options)))

/* A speculator serves one sequence at a time (one thread at a time, as a sampler): it keeps
 * the acceptance measured on it. `options` may be NULL (defaults).
 * Returns success; invalid_argument (NULL speculator_out, bad options). */
GPTOSS_API enum gptoss_status gptoss_speculator_create(
    const struct gptoss_speculator_options* options, gptoss_speculator_t* speculator_out);
GPTOSS_API enum gptoss_status gptoss_speculator_retain(gptoss_speculator_t speculator);
GPTOSS_API enum gptoss_status gptoss_speculator_release(gptoss_speculator_t speculator);
/* Forgets the measured acceptance and the counts: for a new sequence. */
GPTOSS_API enum gptoss_status gptoss_speculator_reset(gptoss_speculator_t speculator);

/* One step of speculative decoding: drafts (as many tokens as pay, by the acceptance measured
 * so far, at most capacity - 1), then gptoss_context_sample_draft. Between 1 and `capacity`
 * tokens come back in tokens_out, what plain decoding would give, the last one not appended:
 * a loop appends it, as after gptoss_context_sample, unless it ends the generation.
 * Returns as gptoss_context_sample_draft; invalid_argument also for NULL speculator, capacity
 * 0, a draft model whose vocabulary differs from the context's model's. */
GPTOSS_API enum gptoss_status gptoss_speculator_step(gptoss_speculator_t speculator,
                                                     gptoss_context_t context,
                                                     gptoss_sampler_t sampler,
                                                     const struct gptoss_draft_options* options,
                                                     uint32_t* tokens_out, size_t capacity,
                                                     size_t* n_tokens_out);

/* The same step in two halves around the processing of the context, so that a host that
 * batches several sequences (a server's continuous batching) verifies all their drafts in one
 * forward step: gptoss_speculator_draft proposes as gptoss_speculator_step does (at most
 * capacity - 1 tokens), drops what the constraint forbids and what follows a stop token, and
 * appends the rest to the context (*n_draft_out of them; 0 appends nothing). The next
 * gptoss_contexts_process that reaches the context's end (alone or with other contexts)
 * computes the pending token and the draft in one step and keeps their logits;
 * gptoss_speculator_verify then gives what gptoss_speculator_step gives (processing the context
 * first if that is still to do) and rolls the rejected tokens back. Between the two, the
 * context must not be appended to, truncated or sampled, and the speculator serves no other
 * context. The result equals gptoss_speculator_step's whatever else the processing batched
 * when the backend is batch invariant (gptoss_model_info.batch_invariant).
 * gptoss_speculator_abandon_draft forgets a pending draft (when the processing that would verify
 * it failed) and takes its tokens out of the context; the sampler never saw them.
 * draft returns as gptoss_speculator_step does, and invalid_state when a draft is pending.
 * verify returns success; invalid_argument (NULL arguments); buffer_too_small (capacity below
 * the draft's length + 1, *n_tokens_out = that; nothing is done); invalid_state (no draft
 * pending, or the context changed since); insufficient_resources (no KV pages while
 * processing: the draft is dropped, the context keeps its tokens before it). */
GPTOSS_API enum gptoss_status gptoss_speculator_draft(gptoss_speculator_t speculator,
                                                      gptoss_context_t context,
                                                      gptoss_sampler_t sampler,
                                                      const struct gptoss_draft_options* options,
                                                      size_t capacity, size_t* n_draft_out);
GPTOSS_API enum gptoss_status gptoss_speculator_verify(gptoss_speculator_t speculator,
                                                       gptoss_context_t context,
                                                       gptoss_sampler_t sampler,
                                                       const struct gptoss_draft_options* options,
                                                       uint32_t* tokens_out, size_t capacity,
                                                       size_t* n_tokens_out);
/* Returns success (also when no draft is pending); invalid_argument (NULL arguments). */
GPTOSS_API enum gptoss_status gptoss_speculator_abandon_draft(gptoss_speculator_t speculator,
                                                              gptoss_context_t context);
/* The log-probabilities of token `index` of the last step (gptoss_speculator_step or _verify),
 * as gptoss_sampler_get_last_logprobs would have given them right after plain decoding sampled
 * that token (the sampler's last ones are those of the step's last token). Returns success;
 * invalid_argument (NULL speculator, index beyond the step's tokens); buffer_too_small
 * (alternatives non-NULL with capacity below their number, which *n_out gets). */
GPTOSS_API enum gptoss_status gptoss_speculator_get_logprobs(
    gptoss_speculator_t speculator, size_t index, struct gptoss_token_logprob* chosen,
    struct gptoss_token_logprob* alternatives, size_t capacity, size_t* n_out);

struct gptoss_speculator_stats { /* since 0.3 */
  size_t struct_size;            /* set by the caller: sizeof(struct gptoss_speculator_stats) */
  uint64_t steps;                /* verification steps since create/reset */
  uint64_t drafted;              /* drafted tokens verified */
  uint64_t accepted;             /* of them, kept (each a forward step saved) */
  uint64_t forced;               /* of the kept, forced by the constraint (jump-forward) */
  uint32_t draft_length;         /* drafter tokens the next step asks for (0: paused) */
};
/* Fills the fields stats->struct_size covers. invalid_argument for NULL or a struct_size
 * below the first version's. */
GPTOSS_API enum gptoss_status gptoss_speculator_get_stats(gptoss_speculator_t speculator,
                                                          struct gptoss_speculator_stats* stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPTOSS_H_ */
