#include "libgptoss/tokenizer/json_vocab.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"

namespace gptoss::tokenizer {
namespace {

std::string read_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(gptoss_status_io, "cannot open tokenizer file '{}': {}", path, std::strerror(errno));
  // One read into a buffer of the file's size: growing a string chunk by chunk costs more
  // than parsing.
  std::string data;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long size = std::ftell(f.get());
    if (size > 0) data.resize(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  size_t got = std::fread(data.data(), 1, data.size(), f.get());
  data.resize(got);
  char buffer[1 << 16];  // in case the file grew, or is not seekable
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f.get())) > 0) data.append(buffer, n);
  if (std::ferror(f.get())) fail(gptoss_status_io, "cannot read tokenizer file '{}'", path);
  return data;
}

// Tracks where in the document each event happens; collects the few values we need.
class Collector final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Collector(JsonVocab& out) : out_(out) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t v) override {
    if (v < 0 && (in_vocab() || in_added_token("id"))) {
      problem_ = "negative token id";
      return false;
    }
    return number_unsigned(static_cast<number_unsigned_t>(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > UINT32_MAX && (in_vocab() || in_added_token("id"))) {
      problem_ = "token id out of range";
      return false;
    }
    if (in_vocab())
      out_.vocab.emplace_back(std::move(frames_.back().key), static_cast<uint32_t>(v));
    if (in_added_token("id")) added_id_ = static_cast<int64_t>(v);
    return value();
  }
  bool number_float(number_float_t, const string_t&) override {
    if (in_vocab()) {
      problem_ = "non-integer token id";
      return false;
    }
    return value();
  }
  bool string(string_t& s) override {
    if (at({"model", "type"})) model_type_ = s;
    if (in_added_token("content")) added_content_ = std::move(s);
    if (frames_.size() >= 3 && frames_[0].key == "pre_tokenizer" && frames_.back().key == "Regex" &&
        frames_[frames_.size() - 2].key == "pattern") {
      ++num_split_patterns_;
      if (out_.split_pattern.empty()) out_.split_pattern = std::move(s);
    }
    if (in_vocab()) {
      problem_ = "token id is a string";
      return false;
    }
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (at({"model", "vocab"})) saw_vocab_ = true;
    frames_.push_back(Frame{false, {}});
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = std::move(k);
    return true;
  }
  bool end_object() override {
    if (frames_.size() == 3 && frames_[0].key == "added_tokens" && frames_[1].is_array) {
      if (added_id_ >= 0 && !added_content_.empty())
        out_.added_tokens.emplace_back(std::move(added_content_), static_cast<uint32_t>(added_id_));
      added_id_ = -1;
      added_content_.clear();
    }
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (at({"model", "vocab"})) {
      problem_ = "model.vocab is an array, not an object";
      return false;
    }
    frames_.push_back(Frame{true, {}});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    problem_ = fmt::format("not valid JSON near byte {}: {}", position, e.what());
    return false;
  }

  const std::string& problem() const { return problem_; }
  const std::string& model_type() const { return model_type_; }
  bool saw_vocab() const { return saw_vocab_; }
  int num_split_patterns() const { return num_split_patterns_; }

 private:
  struct Frame {
    bool is_array;
    std::string key;  // current key (objects only)
  };
  bool value() { return true; }
  bool at(std::initializer_list<std::string_view> keys) const {
    if (frames_.size() != keys.size()) return false;
    size_t i = 0;
    for (std::string_view k : keys) {
      if (frames_[i].is_array || frames_[i].key != k) return false;
      ++i;
    }
    return true;
  }
  bool in_vocab() const {
    return frames_.size() == 3 && !frames_[2].is_array && frames_[0].key == "model" &&
           frames_[1].key == "vocab" && !frames_[1].is_array;
  }
  bool in_added_token(std::string_view field) const {
    return frames_.size() == 3 && frames_[0].key == "added_tokens" && frames_[1].is_array &&
           !frames_[2].is_array && frames_[2].key == field;
  }

  JsonVocab& out_;
  std::vector<Frame> frames_;
  std::string problem_;
  std::string model_type_;
  bool saw_vocab_ = false;
  int num_split_patterns_ = 0;
  int64_t added_id_ = -1;
  std::string added_content_;
};

}  // namespace

JsonVocab read_json_vocab(const std::string& path) {
  const std::string data = read_file(path);
  JsonVocab out;
  // Room for every entry at once (an entry takes 6 bytes or more: "x":0,), at most the o200k
  // vocabulary: no 8 MB reservation for a small or broken file.
  out.vocab.reserve(std::min<size_t>(201088, data.size() / 6));
  Collector collector(out);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(data.begin(), data.end(), &collector);
  } catch (const nlohmann::json::exception& e) {
    fail(gptoss_status_io, "tokenizer file '{}': {}", path, e.what());
  }
  if (!ok) {
    fail(gptoss_status_io, "tokenizer file '{}': {}", path,
         collector.problem().empty() ? "parse stopped" : collector.problem());
  }
  if (!collector.model_type().empty() && collector.model_type() != "BPE") {
    fail(gptoss_status_io, "tokenizer file '{}': model type is '{}', expected BPE", path,
         collector.model_type());
  }
  if (!collector.saw_vocab()) fail(gptoss_status_io, "tokenizer file '{}': no model.vocab", path);
  if (collector.num_split_patterns() > 1) {
    fail(gptoss_status_io, "tokenizer file '{}': {} split regexes; only one is supported", path,
         collector.num_split_patterns());
  }
  return out;
}

}  // namespace gptoss::tokenizer
