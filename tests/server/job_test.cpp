// A job's events waiting for their consumer are bounded: past the cap the job cancels itself
// (a request thread blocked on a client that stopped reading cannot make the server buffer
// without bound); what the consumer takes no longer counts.
#include <catch2/catch.hpp>

#include <chrono>
#include <random>

#include "engine/job.hpp"

using namespace gptoss_server;

namespace {

std::vector<OutputEvent> deltas(size_t n, size_t text_bytes) {
  std::vector<OutputEvent> events(n);
  for (auto& e : events) e.text.assign(text_bytes, 'x');
  return events;
}

}  // namespace

TEST_CASE("job: events left waiting past the cap cancel the job; taken ones do not count",
          "[server][job]") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const size_t cap = 4096 + rng() % 65536;
  Job job(GenerationSpec{}, cap);
  std::vector<OutputEvent> out;
  // A consumer that keeps taking: many times the cap in all, never cancelled.
  size_t pushed = 0;
  while (pushed < 8 * cap) {
    const size_t bytes = 1 + rng() % 200;
    job.push(deltas(1, bytes));
    pushed += bytes;
    out.clear();
    job.take(out, std::chrono::milliseconds(0));
    REQUIRE(out.size() == 1);
  }
  CHECK_FALSE(job.cancelled());
  CHECK_FALSE(job.overflowed());
  // A consumer that stopped: cancelled once what waits passes the cap, not before.
  size_t waiting = 0;
  while (!job.cancelled()) {
    const size_t bytes = 1 + rng() % 200;
    job.push(deltas(1, bytes));
    waiting += bytes + 64;  // text and the fixed cost of an event
    if (!job.cancelled()) REQUIRE(waiting <= cap);
  }
  CHECK(waiting > cap);
  CHECK(job.overflowed());
  // Nothing is lost: the consumer still gets every event it had not taken.
  out.clear();
  job.take(out, std::chrono::milliseconds(0));
  CHECK(out.size() * 64 <= waiting);
  CHECK_FALSE(out.empty());
}

TEST_CASE("job: a job cancelled by its client is not reported as overflowed", "[server][job]") {
  Job job(GenerationSpec{}, 1024);
  job.cancel();
  job.push(deltas(100, 100));
  CHECK(job.cancelled());
  CHECK_FALSE(job.overflowed());
}
