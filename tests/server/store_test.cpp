// The response store on SQLite, and on PostgreSQL when GPTOSS_TEST_POSTGRES_URI names a
// database (scripts/test-server.sh starts one): round trips, deletion, schema versions.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "api/ids.hpp"
#include "store/response_store.hpp"

using namespace gptoss_server;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gptoss-store-" + std::to_string(getpid()) + "-" + new_id("", 8));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

StoredResponse sample(const std::string& id) {
  return {id, 1700000000,
          json::parse(R"({"object": "response", "status": "completed", "output": [{"type": "message",
              "content": [{"type": "output_text", "text": "ünïcode ✓ \"quoted\"\n"}]}]})"),
          json::parse(R"([{"id": "msg_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}])")};
}

void round_trips(ResponseStore& store) {
  const std::string id = new_id("resp_");
  CHECK_FALSE(store.get(id));
  store.put(sample(id));
  auto got = store.get(id);
  REQUIRE(got);
  CHECK(got->id == id);
  CHECK(got->created_at == 1700000000);
  CHECK(got->response == sample(id).response);
  CHECK(got->input_items == sample(id).input_items);
  CHECK_THROWS_AS(store.put(sample(id)), StoreError);  // ids are unique
  CHECK(store.remove(id));
  CHECK_FALSE(store.remove(id));
  CHECK_FALSE(store.get(id));
  CHECK(store.schema_version() == int(store_migrations().size()));
  // Concurrent writers and readers.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string rid = "resp_t" + std::to_string(t) + "_" + std::to_string(i) + new_id("", 8);
        store.put(sample(rid));
        REQUIRE(store.get(rid));
      }
    });
  for (auto& th : threads) th.join();
}

}  // namespace

TEST_CASE("SQLite store: round trips, deletion, concurrency, reopening", "[server][store]") {
  TempDir dir;
  const std::string path = (dir.path / "sub" / "responses.sqlite3").string();  // directory created
  {
    auto store = open_response_store(path);
    CHECK(store->describe() == "sqlite:" + path);
    round_trips(*store);
    store->put(sample("resp_kept"));
  }
  auto again = open_response_store(path);  // migrations run again: nothing to do
  CHECK(again->schema_version() == int(store_migrations().size()));
  CHECK(again->get("resp_kept"));
}

TEST_CASE("SQLite store: a newer schema, a corrupt row and an unusable path are clear errors",
          "[server][store][bad-input]") {
  TempDir dir;
  const std::string path = (dir.path / "r.sqlite3").string();
  open_response_store(path)->put(sample("resp_bad"));
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE responses SET response = '{not json' WHERE id = 'resp_bad'", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  {
    auto store = open_response_store(path);
    CHECK_THROWS_WITH(store->get("resp_bad"), Catch::Contains("corrupt"));
  }
  REQUIRE(sqlite3_exec(db, "UPDATE gptoss_schema_version SET version = 99", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  CHECK_THROWS_WITH(open_response_store(path), Catch::Contains("newer than this server"));
  CHECK_THROWS_AS(open_response_store("/proc/none/r.sqlite3"), StoreError);
  const std::string not_a_db = (dir.path / "text.txt").string();
  { std::FILE* f = std::fopen(not_a_db.c_str(), "w"); std::fputs("this is not a database, just text, long enough to matter", f); std::fclose(f); }
  CHECK_THROWS_AS(open_response_store(not_a_db), StoreError);
}

TEST_CASE("SQLite store: ping refuses while its file system has less room than the reserve",
          "[server][store]") {
  // The decision: fewer bytes available than the reserve refuse, naming the file and both numbers.
  CHECK_NOTHROW(check_store_space("/s/r.sqlite3", 1u << 20, 1u << 20));
  CHECK_NOTHROW(check_store_space("/s/r.sqlite3", uint64_t(1) << 40, 1u << 20));
  CHECK_THROWS_AS(check_store_space("/s/r.sqlite3", (1u << 20) - 1, 1u << 20), StoreError);
  CHECK_THROWS_WITH(check_store_space("/s/r.sqlite3", 0, 1u << 20),
                    Catch::Contains("/s/r.sqlite3") && Catch::Contains(" 0 bytes available") &&
                        Catch::Contains("1048576 bytes reserved"));
  CHECK(kSqliteStoreReserveBytes == 1u << 20);

  // A store on a real file system: a reserve no disk has refuses, the default passes (a test
  // machine's temporary directory has 1 MiB free), so does none; it stores after a refusal.
  TempDir dir;
  const std::string path = (dir.path / "r.sqlite3").string();
  CHECK_NOTHROW(open_sqlite_store(path)->ping());
  CHECK_NOTHROW(open_sqlite_store(path, 0)->ping());
  auto store = open_sqlite_store(path, UINT64_MAX);
  CHECK_THROWS_WITH(store->ping(), Catch::Contains(path) && Catch::Contains("bytes available"));
  store->put(sample("resp_after_refusal"));
  CHECK(store->get("resp_after_refusal"));
  // A file in the current directory: statvfs on ".".
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  CHECK_THROWS_AS(open_sqlite_store("here.sqlite3", UINT64_MAX)->ping(), StoreError);
  fs::current_path(cwd);
}

TEST_CASE("PostgreSQL store: round trips, deletion, concurrency", "[server][store][postgres]") {
  const char* uri = std::getenv("GPTOSS_TEST_POSTGRES_URI");
  if (!uri || !*uri) {
    WARN("GPTOSS_TEST_POSTGRES_URI not set: PostgreSQL store not tested here (scripts/test-server.sh tests it)");
    return;
  }
  auto store = open_response_store(uri);
  CHECK(store->describe().rfind("postgresql://", 0) == 0);
  round_trips(*store);
  auto second = open_response_store(uri);  // a second replica: no migration left to run
  CHECK(second->schema_version() == int(store_migrations().size()));
  CHECK_THROWS_AS(open_response_store("postgresql://nobody@/nothing?host=/nonexistent"), StoreError);
}
