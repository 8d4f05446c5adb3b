#include "support/fuzz_support.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "libgptoss/common/error.hpp"
#include "libgptoss/model/dtypes.hpp"
#include "libgptoss/model/weights.hpp"

namespace gptoss::fuzz {

namespace fs = std::filesystem;

void violated(const std::string& what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void check_status(gptoss_status st, std::initializer_list<gptoss_status> allowed,
                  std::string_view call) {
  trace(st, call);
  if (st == gptoss_status_success) return;
  const std::string message = gptoss_get_last_error_message();
  const std::string where = std::string(call) + " -> " + gptoss_status_to_string(st) + ": " + message;
  GPTOSS_FUZZ_CHECK(st != gptoss_status_internal, where);
  GPTOSS_FUZZ_CHECK(std::find(allowed.begin(), allowed.end(), st) != allowed.end(), where);
  GPTOSS_FUZZ_CHECK(!message.empty(), where);
}

void trace(gptoss_status st, std::string_view call) {
  static const bool verbose = std::getenv("GPTOSS_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "%.*s -> %s: %s\n", int(call.size()), call.data(),
                 gptoss_status_to_string(st), gptoss_get_last_error_message());
}

void check_model_create_fails(const std::string& path, bool use_mmap) {
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.backend = "cpu";
  o.use_mmap = use_mmap;
  gptoss_model_t sentinel = reinterpret_cast<gptoss_model_t>(uintptr_t{0x5eed});
  gptoss_model_t model = sentinel;
  const gptoss_status st = gptoss_model_create_with_options(path.c_str(), &o, &model);
  GPTOSS_FUZZ_CHECK(st != gptoss_status_success, "a fuzz input loaded as a whole model");
  check_status(st, {gptoss_status_io, gptoss_status_invalid_argument,
                    gptoss_status_unsupported_argument},
               "gptoss_model_create_with_options");
  GPTOSS_FUZZ_CHECK(model == sentinel, "a failed create wrote *model_out");
}

void check_tensors_as_uploaded(const WeightSource& source) {
  source.for_each_tensor(source.config().num_layers, [](const gptoss_tensor_desc& d) {
    try {
      dequantize(d);
    } catch (const Error& e) {
      violated(std::string("accepted tensor is inconsistent: ") + e.what());
    }
  });
}

ScratchFile::ScratchFile() {
  fd_ = memfd_create("gptoss-fuzz", MFD_CLOEXEC);
  if (fd_ < 0) violated("memfd_create failed");
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

ScratchFile::~ScratchFile() { ::close(fd_); }

void ScratchFile::write(const uint8_t* data, size_t size) {
  if (::ftruncate(fd_, 0) != 0) violated("ftruncate failed");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) violated("pwrite to the memfd failed");
    done += static_cast<size_t>(n);
  }
}

ScratchDir::ScratchDir() {
  const fs::path base = ::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string tmpl = (base / "gptoss-fuzz-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) violated("mkdtemp failed under " + base.string());
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void ScratchDir::clear() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path_, ec)) fs::remove_all(e.path(), ec);
}

void ScratchDir::write(const std::string& name, std::string_view bytes) {
  const std::string path = (fs::path(path_) / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) violated("cannot create " + path);
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) violated("cannot write " + path);
}

std::vector<std::string_view> split(std::string_view data, std::string_view separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at; (at = data.find(separator, start)) != std::string_view::npos;
       start = at + separator.size())
    parts.push_back(data.substr(start, at - start));
  parts.push_back(data.substr(start));
  return parts;
}

gptoss_tokenizer_t real_tokenizer() {
  static gptoss_tokenizer_t tok = [] {
    const char* env = std::getenv("GPTOSS_TOKENIZER_JSON");
    const std::string path = env && *env ? env : GPTOSS_FUZZ_TOKENIZER_JSON;
    gptoss_tokenizer_t t = nullptr;
    if (gptoss_tokenizer_create_from_file(path.c_str(), &t) != gptoss_status_success)
      violated("cannot load the tokenizer " + path + " (set GPTOSS_TOKENIZER_JSON): " +
               gptoss_get_last_error_message());
    return t;
  }();
  return tok;
}

uint32_t Bytes::take(size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i, ++pos_) v |= uint32_t(pos_ < size_ ? data_[pos_] : 0) << (8 * i);
  return v;
}

}  // namespace gptoss::fuzz
