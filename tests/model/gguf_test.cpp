// The GGUF reader on hand-written files: a valid one, and corrupt headers, counts, lengths,
// offsets and types, each a gptoss::Error with the right status, no crash, no huge allocation.
#include <cstring>

#include "libgptoss/model/formats/gguf.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::TempDir;
using gptoss::test::status_of;
namespace gguf = gptoss::gguf;

struct Builder {
  std::vector<uint8_t> b;
  Builder& u32(uint32_t v) { return raw(&v, 4); }
  Builder& u64(uint64_t v) { return raw(&v, 8); }
  Builder& f32(float v) { return raw(&v, 4); }
  Builder& str(const std::string& s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  Builder& raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Builder& pad(size_t alignment) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
};

// A valid v3 file: 5 metadata values (string, u32, f32, string array, i32 array) and one F32
// tensor "t" of 32 values (0, 1, ..., 31).
struct Parts {
  uint32_t magic = 0x46554747, version = 3;
  uint64_t n_tensors = 1, n_kv = 5;
  uint64_t name_len = 1;
  uint32_t n_dims = 1;
  uint64_t ne0 = 32;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint32_t alignment = 32;
  uint64_t array_len = 2;
};

std::vector<uint8_t> build(const Parts& p) {
  Builder w;
  w.u32(p.magic).u32(p.version).u64(p.n_tensors).u64(p.n_kv);
  w.str("general.architecture").u32(8).str("gpt-oss");
  w.str("general.alignment").u32(4).u32(p.alignment);
  w.str("x.eps").u32(6).f32(0.5f);
  w.str("x.words").u32(9).u32(8).u64(p.array_len).str("ab").str("c");
  w.str("x.ints").u32(9).u32(5).u64(3).u32(7).u32(uint32_t(-1)).u32(3);
  w.u64(p.name_len).raw("t", 1).u32(p.n_dims);
  for (uint32_t i = 0; i < std::min(p.n_dims, 8u); ++i) w.u64(i == 0 ? p.ne0 : 1);
  w.u32(p.type).u64(p.offset);
  w.pad(32);
  for (int i = 0; i < 32; ++i) w.f32(static_cast<float>(i));
  return w.b;
}

gptoss_status open_status(const std::vector<uint8_t>& bytes, std::string* msg = nullptr) {
  TempDir dir;
  gptoss::test::write_bytes(dir / "m.gguf", bytes);
  return status_of([&] { gguf::File f(dir / "m.gguf", true); }, msg);
}

}  // namespace

TEST_CASE("gguf: a valid hand-written file", "[model]") {
  TempDir dir;
  const std::vector<uint8_t> bytes = build({});
  gptoss::test::write_bytes(dir / "m.gguf", bytes);
  gguf::File f(dir / "m.gguf", true);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.data_offset() == bytes.size() - 128);  // the one tensor's 32 floats end the file
  CHECK(f.get_string("general.architecture") == "gpt-oss");
  CHECK(f.get_float("x.eps") == 0.5);
  CHECK(f.get_uint("general.alignment") == 32u);
  CHECK(*f.get_string_array("x.words") == std::vector<std::string>{"ab", "c"});
  CHECK(*f.get_int_array("x.ints") == std::vector<int64_t>{7, -1, 3});
  CHECK(!f.get_uint("absent"));
  CHECK(status_of([&] { f.get_uint("general.architecture"); }) == gptoss_status_io);
  CHECK(status_of([&] { f.get_string_array("x.ints"); }) == gptoss_status_io);
  const auto* t = f.find_tensor("t");
  REQUIRE(t);
  CHECK(t->ne == std::vector<int64_t>{32});
  REQUIRE(t->size == 128);
  float v;
  std::memcpy(&v, t->data + 4 * 31, 4);
  CHECK(v == 31.0f);
}

TEST_CASE("gguf: corrupt files give clear errors", "[model]") {
  auto with = [](const std::function<void(Parts&)>& mutate) {
    Parts p;
    mutate(p);
    return open_status(build(p));
  };
  std::string msg;
  CHECK(with([](Parts& p) { p.magic = 0x12345678; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.version = 1; }) == gptoss_status_unsupported_argument);
  CHECK(with([](Parts& p) { p.version = 0x03000000; }) == gptoss_status_unsupported_argument);
  CHECK(with([](Parts& p) { p.n_tensors = uint64_t{1} << 62; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.n_kv = ~uint64_t{0}; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.name_len = uint64_t{1} << 40; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.array_len = uint64_t{1} << 61; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.n_dims = 0; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.n_dims = 7; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.ne0 = 0; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.ne0 = 33; }) == gptoss_status_io);   // beyond the data
  CHECK(with([](Parts& p) { p.ne0 = ~uint64_t{0} >> 1; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.offset = 4096; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.offset = ~uint64_t{0} - 8; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.offset = 4; }) == gptoss_status_io);  // misaligned
  CHECK(with([](Parts& p) { p.alignment = 24; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.alignment = 0; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.type = 200; }) == gptoss_status_io);
  CHECK(with([](Parts& p) { p.type = 12; }) == gptoss_status_unsupported_argument);  // Q4_K
}

TEST_CASE("gguf: every truncation of a valid file is an io error", "[model]") {
  const auto good = build({});
  for (size_t n = 0; n + 1 < good.size(); ++n) {
    INFO(n);
    CHECK(open_status({good.begin(), good.begin() + static_cast<long>(n)}) == gptoss_status_io);
  }
}

TEST_CASE("gguf: malformed metadata values", "[model]") {
  auto file = [](const std::function<void(Builder&)>& kv) {
    Builder w;
    w.u32(0x46554747).u32(3).u64(0).u64(1);
    kv(w);
    return open_status(w.b);
  };
  CHECK(file([](Builder& w) { w.str("k").u32(13).u32(0); }) == gptoss_status_io);
  CHECK(file([](Builder& w) { w.str("k").u32(9).u32(77).u64(1).u32(0); }) == gptoss_status_io);
  CHECK(file([](Builder& w) { w.str("k").u32(8).u64(uint64_t{1} << 50); }) == gptoss_status_io);
  CHECK(file([](Builder& w) {  // arrays nested deeper than the reader allows
    w.str("k").u32(9);
    for (int i = 0; i < 10; ++i) w.u32(9).u64(1);
    w.u32(4).u64(0);
  }) == gptoss_status_io);
  CHECK(file([](Builder& w) { w.str("k").u32(9).u32(8).u64(3).str("a"); }) == gptoss_status_io);
  Builder dup;
  dup.u32(0x46554747).u32(3).u64(0).u64(2).str("k").u32(4).u32(1).str("k").u32(4).u32(2);
  CHECK(open_status(dup.b) == gptoss_status_io);
}

TEST_CASE("gguf: truncated copies of the conformance model fail cleanly", "[model]") {
  const auto full = gptoss::test::read_bytes(gptoss::test::logits_dir() + "/model.gguf");
  gptoss::OpenOptions o;
  o.load_tokenizer = false;
  for (size_t cut : {size_t{3}, size_t{24}, size_t{1000}, size_t{1} << 20, size_t{12963455},
                     size_t{12970000}, full.size() - 100}) {
    INFO(cut);
    TempDir dir;
    gptoss::test::write_bytes(dir / "m.gguf", {full.begin(), full.begin() + static_cast<long>(cut)});
    CHECK(status_of([&] { gptoss::open_checkpoint(dir / "m.gguf", o); }) == gptoss_status_io);
  }
}
