#pragma once
// Helpers for the model tests: a temporary directory, whole-file I/O, and catching the
// status of a gptoss::Error.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "libgptoss/common/error.hpp"
#include "libgptoss/model/weights.hpp"

namespace gptoss::test {

constexpr size_t kMiB = size_t(1) << 20;

// Open options that leave the checkpoint's tokenizer unread.
inline OpenOptions no_tokenizer() {
  OpenOptions o;
  o.load_tokenizer = false;
  return o;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gptoss-model-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::vector<uint8_t> bytes(std::filesystem::file_size(path));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(in.good());
  return bytes;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// The status of the gptoss::Error that `fn` throws (fails the test if it throws nothing or
// something else); `message` receives the text.
inline gptoss_status status_of(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const gptoss::Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  FAIL("expected a gptoss::Error");
  return gptoss_status_success;
}

}  // namespace gptoss::test
