// byte_pair_merge against a plain transcription of tiktoken's algorithm, on short pieces (the
// stack path) and long ones (the heap path), and the pre-split's white space.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/byte_pair_merge.hpp"
#include "libgptoss/tokenizer/pre_split.hpp"
#include "real_tokenizer.hpp"

using gptoss::Tokenizer;
using gptoss::tokenizer::kNoRank;
using gptoss::tokenizer::RankTable;

namespace {

struct OwnedRanks {
  std::string arena;
  std::vector<uint32_t> offsets;
  std::unique_ptr<RankTable> table;
};

const OwnedRanks& real_ranks() {
  static const OwnedRanks ranks = [] {
    OwnedRanks r;
    const Tokenizer& t = gptoss::test::real_tokenizer();
    for (uint32_t id = 0; id < Tokenizer::kNumTextTokens; ++id) {
      r.offsets.push_back(static_cast<uint32_t>(r.arena.size()));
      r.arena += t.token_bytes(id);
    }
    r.offsets.push_back(static_cast<uint32_t>(r.arena.size()));
    r.table = std::make_unique<RankTable>(r.arena, r.offsets);
    return r;
  }();
  return ranks;
}

// tiktoken's _byte_pair_merge, written as plainly as possible.
std::vector<uint32_t> reference_merge(const RankTable& ranks, const std::string& piece) {
  std::vector<std::pair<size_t, uint32_t>> parts;  // (start, rank of merging with the next)
  auto rank_of = [&](size_t i) -> uint32_t {
    if (i + 2 >= parts.size()) return kNoRank;
    return ranks.find(piece.data() + parts[i].first, parts[i + 2].first - parts[i].first);
  };
  for (size_t i = 0; i <= piece.size(); ++i) parts.emplace_back(i, kNoRank);
  for (size_t i = 0; i + 2 < parts.size(); ++i) parts[i].second = rank_of(i);
  while (true) {
    size_t best = 0;
    uint32_t best_rank = kNoRank;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].second < best_rank) {
        best_rank = parts[i].second;
        best = i;
      }
    }
    if (best_rank == kNoRank) break;
    parts.erase(parts.begin() + static_cast<long>(best) + 1);
    parts[best].second = rank_of(best);
    if (best > 0) parts[best - 1].second = rank_of(best - 1);
  }
  std::vector<uint32_t> ids;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    ids.push_back(ranks.find(piece.data() + parts[i].first, parts[i + 1].first - parts[i].first));
  }
  return ids;
}

}  // namespace

TEST_CASE("byte_pair_merge matches tiktoken's algorithm", "[tokenizer]") {
  const RankTable& ranks = *real_ranks().table;
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabets = {
      "abcdefghijklmnopqrstuvwxyz", "eeeeeettttaaaoinshr", " ", "0123456789",
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xd0\xb0\xd0\xb1\xd0\xb2\xd0\xb3"};
  for (int round = 0; round < 300; ++round) {
    const std::string& alphabet = alphabets[round % alphabets.size()];
    const size_t length = 1 + rng() % (round < 150 ? 128 : 700);
    std::string piece;
    while (piece.size() < length) piece += alphabet[rng() % alphabet.size()];
    std::vector<uint32_t> got;
    gptoss::tokenizer::byte_pair_merge(ranks, piece, got);
    INFO("round " << round << " length " << piece.size());
    CHECK(got == reference_merge(ranks, piece));
  }
}

TEST_CASE("pre-split uses Unicode White_Space for \\s", "[tokenizer]") {
  // tiktoken's Rust regex does not count U+180E as space; PCRE2's own \s would.
  const gptoss::tokenizer::PreSplit split("\\s+");
  auto pieces = [&](const std::string& text) {
    std::vector<std::string> out;
    split.split(
        text, [&](size_t b, size_t e) { out.push_back(text.substr(b, e - b)); },
        [](size_t, size_t) {});
    return out;
  };
  CHECK(pieces("a\xe1\xa0\x8e" "b").empty());                 // U+180E
  CHECK(pieces("a\xe3\x80\x80" "b") == std::vector<std::string>{"\xe3\x80\x80"});  // U+3000
  CHECK(pieces("a\xc2\x85\xe2\x80\xa8" "b") ==
        std::vector<std::string>{"\xc2\x85\xe2\x80\xa8"});                       // NEL, LS
  CHECK(gptoss::tokenizer::with_unicode_white_space("[^\\s\\p{L}]\\S") ==
        "[^\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
        "\\x{202f}\\x{205f}\\x{3000}\\p{L}][^\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}"
        "\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]");
  CHECK_THROWS_AS(gptoss::tokenizer::PreSplit("[\\S]"), gptoss::Error);
  CHECK_THROWS_AS(gptoss::tokenizer::PreSplit("(unclosed"), gptoss::Error);
}
