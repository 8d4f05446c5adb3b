// The bench's sustained read test (examples/bench/membw.cpp): each pass reads the bytes asked
// for, continuing through the ring where the last pass stopped and wrapping at its end, so
// that no pass re-reads what an earlier one left in cache.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "examples/bench/bench.hpp"

namespace {
using gptoss::bench::SustainedReadTest;

// What a pass of `words` from word `pos` of a ring of `ring` words sums on `threads` threads:
// the stretches up to the ring's end and on from its start; each thread's part of a stretch
// rounded down to 4 streams of whole 64-byte lines.
uint64_t expected_sum(size_t ring, size_t& pos, size_t words, unsigned threads) {
  uint64_t sum = 0;
  while (words > 0) {
    const size_t n = std::min(words, ring - pos);
    for (unsigned t = 0; t < threads; ++t) {
      const size_t b = n * t / threads, e = n * (t + 1) / threads;
      const size_t read = (e - b) / 4 / 8 * 8 * 4;
      for (size_t i = 0; i < read; ++i) sum += (pos + b + i) * SustainedReadTest::kRingWordFactor;
    }
    pos = (pos + n) % ring;
    words -= n;
  }
  return sum;
}
}  // namespace

TEST_CASE("sustained read passes walk the ring in order and wrap at its end", "[bench]") {
  const size_t ring_bytes = size_t(1) << 20, ring = ring_bytes / 8;
  for (unsigned threads : {1u, 2u, 3u}) {
    SustainedReadTest test(threads, ring_bytes);
    REQUIRE(test.ok());
    REQUIRE(test.buffer_bytes() == ring_bytes);
    size_t pos = 0;
    // Less than the ring, across its end, several times around it, an odd size.
    for (size_t bytes : {size_t(300000), size_t(900000), size_t(3) * ring_bytes + 4096,
                         size_t(777777)}) {
      INFO("threads " << threads << ", pass of " << bytes << " bytes from word " << pos);
      const uint64_t want = expected_sum(ring, pos, bytes / 8, threads);
      CHECK(test.pass(bytes) > 0.0);
      CHECK(test.last_sum() == want);
    }
  }
}
