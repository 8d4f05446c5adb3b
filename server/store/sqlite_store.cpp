// The response store in an SQLite file: one connection, serialized by a mutex (SQLite is fast
// enough that request threads never wait long), WAL so readers never block the writer.
#include <sqlite3.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <mutex>

#include "store/response_store.hpp"

namespace gptoss_server {
namespace {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw StoreError(std::string("SQLite: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), int(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(std::string("SQLite: ") + sqlite3_errmsg(db_));
  }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteStore : public ResponseStore {
 public:
  SqliteStore(const std::string& path, uint64_t reserve_bytes)
      : path_(path), reserve_bytes_(reserve_bytes) {
    std::error_code ec;
    const auto dir = std::filesystem::path(path).parent_path();
    dir_ = dir.empty() ? "." : dir.string();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw StoreError("cannot open the SQLite store " + path + ": " + message);
    }
    // SQLite falls back to reading a file it cannot write (a read-only file system, no write
    // permission), and fails later with "unable to open database file": say why now.
    if (sqlite3_db_readonly(db_, "main") == 1) {
      sqlite3_close(db_);
      throw StoreError("the SQLite store " + path +
                       " is read-only (a read-only file system, or no write permission)");
    }
    try {
      sqlite3_busy_timeout(db_, 5000);
      exec("PRAGMA journal_mode=WAL");
      // FULL: a response is on disk (the WAL synced) when put returns, which is before its
      // client is told it completed; NORMAL would lose the last commits on a power cut.
      exec("PRAGMA synchronous=FULL");
      migrate();
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  void put(const StoredResponse& r) override {
    std::lock_guard lock(mutex_);
    Statement s(db_, "INSERT INTO responses (id, created_at, response, input_items) VALUES (?1, ?2, ?3, ?4)");
    s.bind(1, r.id).bind(2, r.created_at).bind(3, r.response.dump()).bind(4, r.input_items.dump()).step();
  }

  std::optional<StoredResponse> get(const std::string& id) override {
    std::lock_guard lock(mutex_);
    Statement s(db_, "SELECT created_at, response, input_items FROM responses WHERE id = ?1");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    try {
      return StoredResponse{id, s.integer(0), nlohmann::json::parse(s.text(1)), nlohmann::json::parse(s.text(2))};
    } catch (const nlohmann::json::exception& e) {
      throw StoreError("the stored response " + id + " is corrupt: " + e.what());
    }
  }

  bool remove(const std::string& id) override {
    std::lock_guard lock(mutex_);
    Statement s(db_, "DELETE FROM responses WHERE id = ?1");
    s.bind(1, id).step();
    return sqlite3_changes(db_) > 0;
  }

  std::string describe() const override { return "sqlite:" + path_; }

  // A full disk is met before generating, not when the answer is written (SQLite's "database
  // or disk is full" after the work). One statvfs, no lock. f_bavail: what a process without
  // privileges may use (root may also fill the blocks a file system reserves for it, which
  // are better left to the system). The check is advisory: statvfs failing refuses nothing,
  // and a response that does not fit after all still fails when it is stored.
  void ping() override {
    struct statvfs fs {};
    if (statvfs(dir_.c_str(), &fs) != 0) return;
    check_store_space(path_, uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize), reserve_bytes_);
  }

  int schema_version() override {
    std::lock_guard lock(mutex_);
    Statement s(db_, "SELECT version FROM gptoss_schema_version");
    return s.step() ? int(s.integer(0)) : 0;
  }

 private:
  void exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error ? error : "unknown error";
      sqlite3_free(error);
      throw StoreError("SQLite store " + path_ + ": " + message);
    }
  }

  // Brings the schema to the newest version in one write transaction (another process
  // opening the same file waits for it).
  void migrate() {
    exec("BEGIN IMMEDIATE");
    try {
      exec("CREATE TABLE IF NOT EXISTS gptoss_schema_version (version INTEGER NOT NULL)");
      int version = 0;
      {
        Statement s(db_, "SELECT version FROM gptoss_schema_version");
        if (s.step()) version = int(s.integer(0));
        else exec("INSERT INTO gptoss_schema_version (version) VALUES (0)");
      }
      const auto& steps = store_migrations();
      if (version > int(steps.size()))
        throw StoreError("the store " + path_ + " has schema version " + std::to_string(version) +
                         ", newer than this server's " + std::to_string(steps.size()) + ": upgrade the server");
      for (int v = version; v < int(steps.size()); ++v) exec(steps[size_t(v)]);
      exec("UPDATE gptoss_schema_version SET version = " + std::to_string(steps.size()));
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::string path_;
  std::string dir_;  // the directory holding the file, the WAL and the shared-memory index
  uint64_t reserve_bytes_;
  sqlite3* db_ = nullptr;
  std::mutex mutex_;
};

}  // namespace

void check_store_space(const std::string& path, uint64_t available, uint64_t reserve) {
  if (available >= reserve) return;
  throw StoreError("the file system of the SQLite store " + path + " has " +
                   std::to_string(available) + " bytes available, under the " +
                   std::to_string(reserve) +
                   " bytes reserved for storing a response: free space there");
}

std::unique_ptr<ResponseStore> open_sqlite_store(const std::string& path, uint64_t reserve_bytes) {
  return std::make_unique<SqliteStore>(path, reserve_bytes);
}

}  // namespace gptoss_server
