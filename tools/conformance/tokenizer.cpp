// gptoss-conformance tokenizer DIR: every line of DIR/cases.jsonl is encoded (ordinary or with
// all specials allowed) and must give exactly the listed ids, which must decode back to the
// text byte for byte.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "libgptoss/tokenizer/tokenizer.hpp"
#include "tools/conformance/conformance.hpp"

namespace gptoss::conformance {
namespace {

// Index of the first difference, for a readable failure line.
size_t first_difference(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::string excerpt(const std::string& text) {
  std::string s = text.size() > 60 ? text.substr(0, 60) + "..." : text;
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

int run_tokenizer(const Args& args) {
  if (args.tokenizer_json.empty()) {
    std::fprintf(stderr, "tokenizer conformance needs --tokenizer-json PATH\n");
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  auto tokenizer = Tokenizer::from_json_file(args.tokenizer_json);
  const std::string cases_path = args.dir + "/cases.jsonl";
  std::ifstream in(cases_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", cases_path.c_str());
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  size_t passed = 0, failed = 0, line_number = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    auto report = [&](const std::string& what) {
      ++failed;
      std::printf("FAIL line %zu: %s\n", line_number, what.c_str());
    };
    try {
      const auto c = nlohmann::json::parse(line);
      const std::string text = c.at("text").get<std::string>();
      const auto expected = c.at("ids").get<std::vector<uint32_t>>();
      const std::string mode = c.at("mode").get<std::string>();
      std::vector<uint32_t> ids;
      if (mode == "ordinary") {
        ids = tokenizer->encode_ordinary(text);
      } else if (mode == "special") {
        ids = tokenizer->encode_with_specials(text);
      } else {
        report(fmt::format("unknown mode '{}'", mode));
        continue;
      }
      if (ids != expected) {
        const size_t at = first_difference(ids, expected);
        report(fmt::format("{} {} ({}): {} ids, expected {}; first difference at {}: got [{}] "
                           "expected [{}]",
                           mode, excerpt(text), c.value("category", "?"), ids.size(),
                           expected.size(), at,
                           fmt::join(ids.begin() + at, ids.begin() + std::min(ids.size(), at + 8), ","),
                           fmt::join(expected.begin() + at,
                                     expected.begin() + std::min(expected.size(), at + 8), ",")));
        continue;
      }
      if (tokenizer->decode(expected) != text) {
        report(fmt::format("{} {}: decoding the ids does not give the text back", mode,
                           excerpt(text)));
        continue;
      }
      ++passed;
    } catch (const std::exception& e) {
      report(e.what());
    }
  }
  std::printf("%zu passed, %zu failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}

}  // namespace gptoss::conformance
