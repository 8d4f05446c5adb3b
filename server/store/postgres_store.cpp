// The response store in PostgreSQL, shared by server replicas: a small pool of libpq
// connections (a connection serves one thread at a time), each re-established once if the
// server dropped it. Schema migrations run under an advisory lock, so replicas starting
// together migrate once.
#include <libpq-fe.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "store/response_store.hpp"

namespace gptoss_server {
namespace {

constexpr size_t kPoolSize = 4;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;
struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Conn = std::unique_ptr<PGconn, ConnDeleter>;

void ignore_notice(void*, const char*) {}

// Bounds on every wait for PostgreSQL, so a store that is down or hangs turns into an error
// (a 503) instead of request threads blocked for ever: connecting (libpq waits without end by
// default), each statement, and a peer gone silent (TCP keepalives). Settings in the URI win.
Conn connect(const std::string& uri) {
  const char* keys[] = {
      "connect_timeout", "options", "keepalives_idle", "keepalives_interval", "keepalives_count",
      "dbname",          nullptr};
  const char* values[] = {"5", "-c statement_timeout=10000", "10", "5", "3", uri.c_str(), nullptr};
  Conn c(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (!c || PQstatus(c.get()) != CONNECTION_OK)
    throw StoreError(std::string("cannot connect to the PostgreSQL store: ") +
                     (c ? PQerrorMessage(c.get()) : "out of memory"));
  PQsetNoticeProcessor(c.get(), ignore_notice, nullptr);
  return c;
}

Result run(PGconn* c, const std::string& sql, const std::vector<std::string>& params = {}) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  Result r(params.empty() ? PQexec(c, sql.c_str())
                          : PQexecParams(c, sql.c_str(), int(values.size()), nullptr, values.data(), nullptr,
                                         nullptr, 0));
  const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    throw StoreError(std::string("PostgreSQL: ") + PQerrorMessage(c));
  return r;
}

class PostgresStore : public ResponseStore {
 public:
  explicit PostgresStore(std::string uri) : uri_(std::move(uri)) {
    Conn c = connect(uri_);
    description_ = std::string("postgresql://") + PQhost(c.get()) + ":" + PQport(c.get()) + "/" + PQdb(c.get());
    migrate(c.get());
    idle_.push_back(std::move(c));
    created_ = 1;
  }

  void put(const StoredResponse& r) override {
    with_connection([&](PGconn* c) {
      run(c, "INSERT INTO responses (id, created_at, response, input_items) VALUES ($1, $2, $3, $4)",
          {r.id, std::to_string(r.created_at), r.response.dump(), r.input_items.dump()});
    });
  }

  std::optional<StoredResponse> get(const std::string& id) override {
    std::optional<StoredResponse> out;
    with_connection([&](PGconn* c) {
      Result r = run(c, "SELECT created_at, response, input_items FROM responses WHERE id = $1", {id});
      if (PQntuples(r.get()) == 0) return;
      try {
        out = StoredResponse{id, std::stoll(PQgetvalue(r.get(), 0, 0)), nlohmann::json::parse(PQgetvalue(r.get(), 0, 1)),
                             nlohmann::json::parse(PQgetvalue(r.get(), 0, 2))};
      } catch (const std::exception& e) {
        throw StoreError("the stored response " + id + " is corrupt: " + e.what());
      }
    });
    return out;
  }

  bool remove(const std::string& id) override {
    bool removed = false;
    with_connection([&](PGconn* c) {
      Result r = run(c, "DELETE FROM responses WHERE id = $1", {id});
      removed = std::string(PQcmdTuples(r.get())) != "0";
    });
    return removed;
  }

  std::string describe() const override { return description_; }

  void ping() override {
    with_connection([&](PGconn* c) { run(c, "SELECT 1"); });
  }

  int schema_version() override {
    int version = 0;
    with_connection([&](PGconn* c) {
      Result r = run(c, "SELECT version FROM gptoss_schema_version");
      if (PQntuples(r.get()) > 0) version = std::stoi(PQgetvalue(r.get(), 0, 0));
    });
    return version;
  }

 private:
  static void migrate(PGconn* c) {
    run(c, "BEGIN");
    try {
      run(c, "SELECT pg_advisory_xact_lock(7428195)");  // "gptoss schema" for every replica
      run(c, "CREATE TABLE IF NOT EXISTS gptoss_schema_version (version INTEGER NOT NULL)");
      Result r = run(c, "SELECT version FROM gptoss_schema_version");
      int version = 0;
      if (PQntuples(r.get()) > 0) version = std::stoi(PQgetvalue(r.get(), 0, 0));
      else run(c, "INSERT INTO gptoss_schema_version (version) VALUES (0)");
      const auto& steps = store_migrations();
      if (version > int(steps.size()))
        throw StoreError("the PostgreSQL store has schema version " + std::to_string(version) +
                         ", newer than this server's " + std::to_string(steps.size()) + ": upgrade the server");
      for (int v = version; v < int(steps.size()); ++v) run(c, steps[size_t(v)]);
      run(c, "UPDATE gptoss_schema_version SET version = " + std::to_string(steps.size()));
      run(c, "COMMIT");
    } catch (...) {
      PQclear(PQexec(c, "ROLLBACK"));
      throw;
    }
  }

  // Runs `fn` on a pooled connection; a connection the server dropped is reset and `fn` tried
  // once more.
  template <typename Fn>
  void with_connection(Fn fn) {
    Conn c = acquire();
    try {
      if (PQstatus(c.get()) != CONNECTION_OK) PQreset(c.get());
      fn(c.get());
    } catch (const StoreError&) {
      if (PQstatus(c.get()) == CONNECTION_OK) {
        release(std::move(c));
        throw;
      }
      PQreset(c.get());
      if (PQstatus(c.get()) != CONNECTION_OK) {
        release(std::move(c));
        throw;
      }
      try {
        fn(c.get());
      } catch (...) {
        release(std::move(c));
        throw;
      }
    }
    release(std::move(c));
  }

  Conn acquire() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!idle_.empty()) {
        Conn c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      if (created_ < kPoolSize) {
        ++created_;
        lock.unlock();
        try {
          return connect(uri_);
        } catch (...) {
          std::lock_guard relock(mutex_);
          --created_;
          throw;
        }
      }
      available_.wait(lock);
    }
  }

  void release(Conn c) {
    {
      std::lock_guard lock(mutex_);
      idle_.push_back(std::move(c));
    }
    available_.notify_one();
  }

  std::string uri_;
  std::string description_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Conn> idle_;
  size_t created_ = 0;
};

}  // namespace

std::unique_ptr<ResponseStore> open_postgres_store(const std::string& uri) {
  return std::make_unique<PostgresStore>(uri);
}

}  // namespace gptoss_server
