#pragma once
// The one rule for every struct of gptoss.h that begins with `size_t struct_size` (options the
// caller passes in, info the library fills in), so that a program built against an older
// gptoss.h keeps working with a newer library:
//  - a struct_size smaller than the struct's first published size is invalid_argument;
//  - any larger one is accepted: the library reads (or writes) the fields that size covers
//    and gives the rest their defaults (or leaves them alone), whether the caller's struct is
//    older, current or newer than the library's.
#include <cstddef>
#include <cstring>
#include <iterator>

#include "gptoss.h"
#include "libgptoss/api/api_util.hpp"

namespace gptoss::api {

// Published versions of a struct: where each version's last field ends, oldest first.
template <typename T>
struct StructVersions;

constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

#define GPTOSS_UPTO(field) (offsetof(S, field) + sizeof(S::field))
#define GPTOSS_STRUCT_VERSIONS(T, ...)                                                   \
  template <>                                                                            \
  struct StructVersions<T> {                                                             \
    using S = T;                                                                         \
    static constexpr size_t ends[] = {__VA_ARGS__};                                      \
    static_assert(round_up(ends[std::size(ends) - 1], alignof(T)) == sizeof(T), #T       \
                  " has a field that its row in libgptoss/api/struct_versions.hpp does " \
                  "not list: append GPTOSS_UPTO(<new field>) to the row");               \
  };

// ---------------------------------------------------------------------------------------------
// Every versioned struct of gptoss.h and its published versions, each given by its last field
// (from `git log -p -- include/gptoss.h`; on x86-64 the sizes are in the comments). The same
// rows are docs/abi.md's table of sizes and the `since` markers in gptoss.h:
// tests/api/abi_doc_test.cpp checks both against this list.
//
// APPENDING A FIELD to one of these structs: add GPTOSS_UPTO(new_field) at the end of its row
// (the static_assert above stops the build until you do, except for a field that fits in the
// old tail padding: check the row by hand), mark the field `/* since 0.x (N bytes) */` in
// gptoss.h and add the size to the row of docs/abi.md. A NEW versioned struct: add a row;
// read_struct / write_struct do not compile for a struct without one. Never edit an entry.
#define GPTOSS_VERSIONED_STRUCTS(ROW)                                               \
  ROW(gptoss_model_options, /* 40, 48, 48 (split_mode took the tail padding) */     \
      GPTOSS_UPTO(tokenizer_path), GPTOSS_UPTO(precision), GPTOSS_UPTO(split_mode)) \
  ROW(gptoss_model_info, /* 128, 136, 152 */                                        \
      GPTOSS_UPTO(format), GPTOSS_UPTO(decode_weight_bytes), GPTOSS_UPTO(kernels))  \
  ROW(gptoss_kvcache_options, GPTOSS_UPTO(dtype))                     /* 32 */      \
  ROW(gptoss_context_options, GPTOSS_UPTO(max_batch_tokens))          /* 40 */      \
  ROW(gptoss_sampler_options, GPTOSS_UPTO(top_logprobs))              /* 56 */      \
  ROW(gptoss_harmony_render_options, GPTOSS_UPTO(auto_drop_analysis)) /* 16 */      \
  ROW(gptoss_harmony_state, GPTOSS_UPTO(num_messages))                /* 64 */      \
  ROW(gptoss_constraint_options,                                      /* 16, 24 */  \
      GPTOSS_UPTO(max_reasoning_tokens), GPTOSS_UPTO(max_tokens))                   \
  ROW(gptoss_draft_options, GPTOSS_UPTO(n_stop_tokens)) /* 24 */                    \
  ROW(gptoss_speculator_options, /* 32, 32 (cost_bound took the tail padding) */    \
      GPTOSS_UPTO(max_draft), GPTOSS_UPTO(cost_bound))                              \
  ROW(gptoss_speculator_stats, GPTOSS_UPTO(draft_length)) /* 48 */
// ---------------------------------------------------------------------------------------------

GPTOSS_VERSIONED_STRUCTS(GPTOSS_STRUCT_VERSIONS)

#undef GPTOSS_STRUCT_VERSIONS
#undef GPTOSS_UPTO

// sizeof the struct's first published version: the smallest struct_size accepted.
template <typename T>
constexpr size_t first_published_size() {
  return round_up(StructVersions<T>::ends[0], alignof(T));
}

// Bytes of a caller's struct that the library may touch: up to the end of the newest published
// version whose fields its struct_size holds in full.
template <typename T>
size_t covered_bytes(const T* s, const char* what) {
  require(s, what);
  // Larger than any struct will ever be: uninitialized memory, not a newer version.
  constexpr size_t kImplausible = size_t(1) << 20;
  if (s->struct_size < first_published_size<T>() || s->struct_size >= kImplausible)
    fail(gptoss_status_invalid_argument,
         "{}->struct_size is {}: set it with the matching *_init() or to sizeof (at least {})",
         what, s->struct_size, first_published_size<T>());
  size_t n = 0;
  for (size_t end : StructVersions<T>::ends)
    if (end <= s->struct_size) n = end;
  return n;
}

// A struct the caller passes in: NULL gives `defaults`; otherwise the fields its struct_size
// covers, over `defaults`. One call per API function:
//   const gptoss_x_options o = api::read_struct(options, default_x_options(), "options");
template <typename T>
T read_struct(const T* in, const T& defaults, const char* what) {
  if (in == nullptr) return defaults;
  T out = defaults;
  std::memcpy(static_cast<void*>(&out), in, covered_bytes(in, what));
  out.struct_size = sizeof(T);
  return out;
}

// A struct the library fills in: the fields the caller's struct_size covers get `value`'s;
// struct_size and whatever lies beyond are left as the caller set them.
template <typename T>
void write_struct(T* out, const T& value, const char* what) {
  const size_t n = covered_bytes(out, what);
  constexpr size_t skip = sizeof(out->struct_size);
  std::memcpy(reinterpret_cast<char*>(out) + skip, reinterpret_cast<const char*>(&value) + skip,
              n - skip);
}

// gptoss_x_init_sized(s, size): `size` is the caller's sizeof. Zeroes those bytes, writes the
// defaults of the fields they hold in full (the newest version they cover) and struct_size =
// size, so a program built against an older, smaller struct is never written past its end.
template <typename T>
void init_struct(T* s, size_t size, const T& defaults, const char* what) {
  require(s, what);
  constexpr size_t kImplausible = size_t(1) << 20;
  if (size < first_published_size<T>() || size >= kImplausible)
    fail(gptoss_status_invalid_argument, "{} size is {}: pass sizeof your struct (at least {})", what,
         size, first_published_size<T>());
  size_t n = 0;
  for (size_t end : StructVersions<T>::ends)
    if (end <= size) n = end;
  std::memset(static_cast<void*>(s), 0, size);
  std::memcpy(static_cast<void*>(s), &defaults, n);
  s->struct_size = size;
}

// What the plain gptoss_x_init(options) symbol writes: the struct as it was when gptoss.h made
// that name a macro over gptoss_x_init_sized (0.2). Programs built before then call the symbol;
// newer ones pass their sizeof. Never change an entry; a new options struct adds one.
template <typename T>
inline constexpr size_t kPlainInitSize = 0;
template <>
inline constexpr size_t kPlainInitSize<gptoss_model_options> = 48;
template <>
inline constexpr size_t kPlainInitSize<gptoss_kvcache_options> = 32;
template <>
inline constexpr size_t kPlainInitSize<gptoss_context_options> = 40;
template <>
inline constexpr size_t kPlainInitSize<gptoss_sampler_options> = 56;
template <>
inline constexpr size_t kPlainInitSize<gptoss_harmony_render_options> = 16;
template <>
inline constexpr size_t kPlainInitSize<gptoss_constraint_options> = 16;
template <>
inline constexpr size_t kPlainInitSize<gptoss_draft_options> = 24;
template <>
inline constexpr size_t kPlainInitSize<gptoss_speculator_options> = 32;

}  // namespace gptoss::api
