#pragma once
// Where stored responses live (`store: true`): each Response object with the input items it
// was generated from (the whole conversation, so previous_response_id needs one lookup and a
// deleted ancestor does not break its descendants). Embedded SQLite (a file, WAL mode) by
// default; PostgreSQL when several server replicas share one store. The schema is versioned
// and migrated when the store opens. Thread safe.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gptoss_server {

struct StoredResponse {
  std::string id;
  int64_t created_at = 0;
  nlohmann::json response;     // the Response object
  nlohmann::json input_items;  // array of items with ids: earlier turns, then this request's
};

// The store is unreachable or refused an operation.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ResponseStore {
 public:
  virtual ~ResponseStore() = default;
  virtual void put(const StoredResponse& response) = 0;
  virtual std::optional<StoredResponse> get(const std::string& id) = 0;
  // False if there was no such response.
  virtual bool remove(const std::string& id) = 0;
  // "sqlite:/path/responses.sqlite3" or "postgresql://host:port/db" (no password).
  virtual std::string describe() const = 0;
  virtual int schema_version() = 0;
  // Throws StoreError when a response could not be stored now: a server-side store that
  // cannot be reached, an SQLite file whose file system is (nearly) full. Called before
  // generating a response to store, so it is cheap.
  virtual void ping() {}
};

// `spec`: a postgresql:// or postgres:// URI, or else the path of a SQLite file (created with
// its directory if missing). Throws StoreError.
std::unique_ptr<ResponseStore> open_response_store(const std::string& spec);

// The free space (bytes this process may write) under which the SQLite store's ping refuses.
// 1 MiB: a file system with less room is full in practice, and a stored response (the Response
// with its whole conversation: a few KiB for most, about 0.5 MiB of text at a 128k-token
// context) is written twice, to the WAL and at the checkpoint to the database, so most fit
// many times over and the longest about once. More would refuse responses on disks that still
// have room for them.
inline constexpr uint64_t kSqliteStoreReserveBytes = uint64_t(1) << 20;

// The SQLite store at `path`, whose ping throws while its file system has fewer than
// `reserve_bytes` available. open_response_store gives the default reserve.
std::unique_ptr<ResponseStore> open_sqlite_store(const std::string& path,
                                                 uint64_t reserve_bytes = kSqliteStoreReserveBytes);

// The SQLite store's decision: throws StoreError naming `path`, `available` and `reserve` when
// `available` bytes are fewer than `reserve`.
void check_store_space(const std::string& path, uint64_t available, uint64_t reserve);

// The schema, one step per version (index 0 = version 1). SQL common to both engines.
const std::vector<std::string>& store_migrations();

}  // namespace gptoss_server
