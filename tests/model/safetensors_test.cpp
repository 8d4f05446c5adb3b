// The safetensors reader on hand-written files: a valid one, shards, and every kind of
// corruption, each a gptoss::Error with the right status and no crash.
#include <nlohmann/json.hpp>

#include "libgptoss/model/formats/safetensors.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::TempDir;
using gptoss::test::status_of;
namespace st = gptoss::safetensors;

std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Two tensors: "a" F32 [2] = {1, -2}, "b" U8 [2, 3] = 0..5.
std::vector<uint8_t> valid_data() {
  std::vector<uint8_t> d(8 + 6);
  const float a[2] = {1.0f, -2.0f};
  std::memcpy(d.data(), a, 8);
  for (int i = 0; i < 6; ++i) d[8 + i] = static_cast<uint8_t>(i);
  return d;
}

nlohmann::json valid_header() {
  return {{"__metadata__", {{"format", "pt"}}},
          {"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
          {"b", {{"dtype", "U8"}, {"shape", {2, 3}}, {"data_offsets", {8, 14}}}}};
}

gptoss_status open_status(const std::vector<uint8_t>& bytes) {
  TempDir dir;
  gptoss::test::write_bytes(dir / "model.safetensors", bytes);
  return status_of([&] { st::File f(dir / "model.safetensors", true); });
}

gptoss_status header_status(const nlohmann::json& header) {
  return open_status(safetensors_bytes(header.dump(), valid_data()));
}

}  // namespace

TEST_CASE("safetensors: a valid file maps its tensors", "[model]") {
  TempDir dir;
  gptoss::test::write_bytes(dir / "model.safetensors",
                            safetensors_bytes(valid_header().dump(), valid_data()));
  for (bool mmap : {true, false}) {
    st::File f(dir / "model.safetensors", mmap);
    REQUIRE(f.tensors().size() == 2);
    const auto& a = f.tensors().at("a");
    CHECK(a.dtype == "F32");
    CHECK(a.shape == std::vector<int64_t>{2});
    REQUIRE(a.size == 8);
    float v[2];
    std::memcpy(v, a.data, 8);
    CHECK(v[0] == 1.0f);
    CHECK(v[1] == -2.0f);
    const auto& b = f.tensors().at("b");
    CHECK(b.shape == std::vector<int64_t>{2, 3});
    CHECK(b.data[5] == 5);
    CHECK(f.mapped().is_mapped() == mmap);
  }
}

TEST_CASE("safetensors: corrupt files are io errors", "[model]") {
  const auto good = safetensors_bytes(valid_header().dump(), valid_data());
  CHECK(open_status({}) == gptoss_status_io);
  CHECK(open_status({1, 2, 3}) == gptoss_status_io);
  // Header length beyond the file, and absurdly large.
  auto too_long = good;
  too_long[0] = 0xff;
  too_long[1] = 0xff;
  CHECK(open_status(too_long) == gptoss_status_io);
  auto huge = good;
  huge[7] = 0x7f;
  CHECK(open_status(huge) == gptoss_status_io);
  // Every truncation of a valid file.
  for (size_t n = 0; n + 1 < good.size(); ++n) {
    INFO(n);
    CHECK(open_status({good.begin(), good.begin() + static_cast<long>(n)}) == gptoss_status_io);
  }
  CHECK(open_status(safetensors_bytes("{\"a\": garbage", valid_data())) == gptoss_status_io);
  CHECK(open_status(safetensors_bytes("[1, 2]", valid_data())) == gptoss_status_io);

  using J = nlohmann::json;
  auto with = [](const std::function<void(J&)>& mutate) {
    J h = valid_header();
    mutate(h);
    return h;
  };
  CHECK(header_status(with([](J& h) { h["a"]["data_offsets"] = {0, 800}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["data_offsets"] = {8, 0}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["data_offsets"] = {0, -8}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["data_offsets"] = {0}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["shape"] = {3}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["shape"] = {-2}; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) {
          h["a"]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40, uint64_t{1} << 40};
        })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"].erase("dtype"); })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"] = "not an object"; })) == gptoss_status_io);
  CHECK(header_status(with([](J& h) { h["a"]["dtype"] = "F128"; })) ==
        gptoss_status_unsupported_argument);
}

TEST_CASE("safetensors: sharded checkpoints follow the index", "[model]") {
  TempDir dir;
  const auto data = valid_data();
  nlohmann::json h1 = {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}};
  nlohmann::json h2 = {{"b", {{"dtype", "U8"}, {"shape", {2, 3}}, {"data_offsets", {0, 6}}}}};
  gptoss::test::write_bytes(dir / "s1.safetensors",
                            safetensors_bytes(h1.dump(), {data.begin(), data.begin() + 8}));
  gptoss::test::write_bytes(dir / "s2.safetensors",
                            safetensors_bytes(h2.dump(), {data.begin() + 8, data.end()}));
  auto write_index = [&](const nlohmann::json& map) {
    gptoss::test::write_text(dir / "model.safetensors.index.json",
                             nlohmann::json{{"metadata", {}}, {"weight_map", map}}.dump());
  };
  write_index({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
  st::Checkpoint c(dir.path().string(), true);
  CHECK(c.num_tensors() == 2);
  REQUIRE(c.find("a"));
  REQUIRE(c.find("b"));
  CHECK(c.find("b")->data[3] == 3);
  CHECK(c.find("c") == nullptr);

  const std::string d = dir.path().string();
  write_index({{"a", "s2.safetensors"}, {"b", "s2.safetensors"}});  // a is not in s2
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);
  write_index({{"a", "../s1.safetensors"}});
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);
  write_index({{"a", "missing.safetensors"}});
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);
  write_index({{"a", 7}});
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);
  gptoss::test::write_text(dir / "model.safetensors.index.json", "{not json");
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);
  // Without an index every *.safetensors file is read; a tensor in two of them is an error.
  std::filesystem::remove(dir / "model.safetensors.index.json");
  CHECK_NOTHROW(st::Checkpoint(d, true));
  gptoss::test::write_bytes(dir / "s3.safetensors",
                            safetensors_bytes(h1.dump(), {data.begin(), data.begin() + 8}));
  CHECK(status_of([&] { st::Checkpoint x(d, true); }) == gptoss_status_io);

  TempDir empty;
  CHECK(status_of([&] { st::Checkpoint x(empty.path().string(), true); }) == gptoss_status_io);
}

// A header of 10 MB of "[[[[...]]]]" used to crash while the error message printed the value
// (nlohmann's dump recurses once per level); now the parse refuses nesting beyond 128 levels,
// and values quoted in messages are cut.
TEST_CASE("safetensors: deeply nested or huge header values are io errors", "[model]") {
  const size_t depth = 5'000'000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  TempDir dir;
  gptoss::test::write_bytes(
      dir / "model.safetensors",
      safetensors_bytes(R"({"a":{"dtype":"F32","shape":[)" + deep + R"(],"data_offsets":[0,8]}})",
                        valid_data()));
  std::string msg;
  CHECK(status_of([&] { st::File f(dir / "model.safetensors", true); }, &msg) == gptoss_status_io);
  CHECK(msg.find("the header: JSON nested deeper than 128 levels") != std::string::npos);

  auto with_shape = [&](const std::string& shape) {
    gptoss::test::write_bytes(
        dir / "model.safetensors",
        safetensors_bytes(R"({"a":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]}})",
                          valid_data()));
    return status_of([&] { st::File f(dir / "model.safetensors", true); }, &msg);
  };
  CHECK(with_shape("[\"" + std::string(1 << 20, 'x') + "\"]") == gptoss_status_io);
  CHECK(msg.find("must be a non-negative integer, got \"xxxx") != std::string::npos);
  CHECK(msg.size() < 400);
  // A number beyond a double (nlohmann's out_of_range, not a parse error) used to escape as
  // an internal error; a megabyte of digits is not copied into the message either.
  for (const std::string& big : {std::string("1e400"), std::string(1 << 20, '9') + ".5"}) {
    CHECK(with_shape("[" + big + "]") == gptoss_status_io);
    CHECK(msg.find("number overflow") != std::string::npos);
    CHECK(msg.size() < 400);
  }
}
