#pragma once
// An error the client caused or must know about, in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}} with an HTTP status.
// Request parsing and validation throw it; the HTTP layer turns it into the response.
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace gptoss_server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {},
           std::string code = {});

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // {"error": {...}}; empty param and code become null.
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_, message_, param_, code_;  // message_: whole (what() stops at a NUL)
};

// 400 invalid_request_error naming the parameter (e.g. "input[2].content").
ApiError invalid_request(const std::string& message, const std::string& param = {},
                         const std::string& code = {});
// 404 invalid_request_error for an unknown id (model, response).
ApiError not_found(const std::string& message, const std::string& param = {},
                   const std::string& code = {});
// 500 server_error: a real internal failure.
ApiError server_error(const std::string& message);

// `s` cut to about `max_bytes` (on a UTF-8 character boundary) with "..." and its length:
// messages quote what the client sent without growing with it (a 1 MB tool name).
std::string excerpt(std::string_view s, size_t max_bytes = 64);

}  // namespace gptoss_server
