// MappedFile re-maps part of a file to have its page cache read again in 2 MiB folios. Other
// threads map memory meanwhile (a server starts its HTTP threads while the model loads; each
// thread's stack is a mapping): none of their mappings may ever be replaced by the file's.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "libgptoss/model/mapped_file.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::kMiB;

// Opens of fresh files beside the churners. Under ThreadSanitizer (scripts/reliability.sh),
// which intercepts every mapping and thread start, 120 take 135 s of a CI run; it checks the
// threads' accesses, which a few opens exercise, and the release and ASan runs keep all 120.
#if defined(__SANITIZE_THREAD__)
constexpr int kOpens = 24;
#else
constexpr int kOpens = 120;
#endif

// A file written in 64 KiB writes (its cache in small folios: the case that re-maps).
void write_fresh_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n =
        ::write(fd, bytes.data() + done, std::min<size_t>(64 * 1024, bytes.size() - done));
    REQUIRE(n > 0);
    done += size_t(n);
  }
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("opening a mapped file never maps it over another thread's memory",
          "[model][mapped_file][concurrency]") {
  gptoss::test::TempDir dir;
  std::vector<uint8_t> bytes(24 * kMiB);
  std::mt19937 rng(7);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() | 1);  // never the churners' 0

  // Churners: map 1-6 MiB, fill it with zeros and their own stamp, check it, unmap; and start
  // short-lived threads (a stack each). A mapping the file took over reads the file's bytes.
  std::atomic<bool> stop{false};
  std::atomic<size_t> overwritten{0}, rounds{0};
  auto churn = [&](unsigned id) {
    std::mt19937 r(id);
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t len = (1 + r() % 6) * kMiB;
      void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) continue;
      auto* w = static_cast<volatile uint8_t*>(m);
      for (size_t i = 0; i < len; i += 4096) w[i] = 0;
      std::this_thread::yield();
      for (size_t i = 0; i < len; i += 4096)
        if (w[i] != 0) {
          overwritten.fetch_add(1);
          break;
        }
      ::munmap(m, len);
      std::thread([] {
        volatile uint8_t stack_use[64 * 1024];
        for (size_t i = 0; i < sizeof stack_use; i += 4096) stack_use[i] = 0;
      }).join();
      rounds.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> churners;
  for (unsigned i = 0; i < 2; ++i) churners.emplace_back(churn, i);

  for (int i = 0; i < kOpens; ++i) {
    const std::string path = dir / ("f" + std::to_string(i));
    write_fresh_file(path, bytes);
    {
      gptoss::MappedFile f(path, /*use_mmap=*/true);
      REQUIRE(f.size() == bytes.size());
      REQUIRE(std::memcmp(f.data(), bytes.data(), bytes.size()) == 0);
    }
    ::unlink(path.c_str());
  }
  stop = true;
  for (auto& t : churners) t.join();
  INFO(rounds.load() << " rounds of mapping and thread starts beside " << kOpens << " opens");
  CHECK(overwritten.load() == 0);
}
