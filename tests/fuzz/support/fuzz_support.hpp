#pragma once
// What every fuzz harness (tests/fuzz/harnesses/*.cpp) shares: the property checks that turn
// a broken promise into a crash libFuzzer reports, scratch files for loaders that take a path,
// and the real tokenizer loaded once.
//
// A harness is one file defining LLVMFuzzerTestOneInput (and optionally LLVMFuzzerInitialize).
// The same file is built twice: with -fsanitize=fuzzer in the fuzz build (GPTOSS_FUZZ), and
// with support/replay_main.cpp in the regular builds, where ctest replays its corpus.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "gptoss.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Defines LLVMFuzzerInitialize to load the real tokenizer before the first input, so that its
// seconds do not count against that input's timeout.
#define GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()               \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {            \
    ::gptoss::fuzz::real_tokenizer();                             \
    return 0;                                                     \
  }

namespace gptoss {
class WeightSource;
}

namespace gptoss::fuzz {

// Prints "fuzz property violated: <what>" and aborts, which libFuzzer reports as a crash with
// the input that caused it.
[[noreturn]] void violated(const std::string& what);

#define GPTOSS_FUZZ_CHECK(cond, what)                                                     \
  do {                                                                                    \
    if (!(cond)) ::gptoss::fuzz::violated(std::string(#cond) + ": " + std::string(what)); \
  } while (0)

// The C API's failure contract for outside input: `st` is success or one of `allowed`, never
// internal (a bug, by the header's own words); a failure carries a non-empty message.
void check_status(gptoss_status st, std::initializer_list<gptoss_status> allowed,
                  std::string_view call);

// gptoss_model_create_with_options (CPU backend, `use_mmap`) on a checkpoint no model can be
// made of (no tokenizer fits a fuzz input): it must fail with io / invalid_argument /
// unsupported_argument and a message, never internal, leaving *model_out untouched.
void check_model_create_fails(const std::string& path, bool use_mmap);

// Hands out every tensor of `source` as a backend would receive it: each must be exactly as
// large as its dtype and shape say, its bytes readable (dequantize checks the sizes and reads
// every byte).
void check_tensors_as_uploaded(const WeightSource& source);

// With GPTOSS_FUZZ_VERBOSE set, prints `call -> status: message` of the last call (to see how
// far a corpus input gets when replaying it).
void trace(gptoss_status st, std::string_view call);

// One file whose bytes are replaced per input: a memfd, reached by path through
// /proc/self/fd, so loaders that open paths run their real I/O without touching the disk.
class ScratchFile {
 public:
  ScratchFile();
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  void write(const uint8_t* data, size_t size);
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A directory (on /dev/shm when it is writable) emptied and refilled per input.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  void clear();
  void write(const std::string& name, std::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `data` cut at every occurrence of `separator` (n separators give n + 1 parts).
std::vector<std::string_view> split(std::string_view data, std::string_view separator);

// The real o200k_harmony tokenizer, loaded once through the C API: $GPTOSS_TOKENIZER_JSON, or
// the path the build was configured with. Aborts with a message if it cannot be loaded.
gptoss_tokenizer_t real_tokenizer();

// Little-endian reader over the fuzz input; reads past the end give zeros.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return empty() ? 0 : size_ - pos_; }
  uint32_t take(size_t n);  // n <= 4 bytes
  std::string_view rest() const {
    return {reinterpret_cast<const char*>(data_) + pos_, remaining()};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace gptoss::fuzz
