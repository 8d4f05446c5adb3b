// Schema versions of the response store. Append a step to change the schema; never edit a
// released one (stores in the field are at its version).
#include "store/response_store.hpp"

namespace gptoss_server {

const std::vector<std::string>& store_migrations() {
  static const std::vector<std::string> steps = {
      // 1: responses with their full input, newest found by created_at.
      "CREATE TABLE responses ("
      " id TEXT PRIMARY KEY,"
      " created_at BIGINT NOT NULL,"
      " response TEXT NOT NULL,"
      " input_items TEXT NOT NULL);"
      "CREATE INDEX responses_created_at ON responses (created_at);",
  };
  return steps;
}

std::unique_ptr<ResponseStore> open_postgres_store(const std::string& uri);

std::unique_ptr<ResponseStore> open_response_store(const std::string& spec) {
  if (spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0) return open_postgres_store(spec);
  return open_sqlite_store(spec);
}

}  // namespace gptoss_server
