#include "api/api_error.hpp"

namespace gptoss_server {

ApiError::ApiError(int status, std::string type, const std::string& message, std::string param,
                   std::string code)
    : std::runtime_error(message), status_(status), type_(std::move(type)), message_(message),
      param_(std::move(param)), code_(std::move(code)) {}

nlohmann::json ApiError::to_json() const {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  return {{"error",
           {{"message", message_}, {"type", type_}, {"param", or_null(param_)}, {"code", or_null(code_)}}}};
}

ApiError invalid_request(const std::string& message, const std::string& param,
                         const std::string& code) {
  return ApiError(400, "invalid_request_error", message, param, code);
}

ApiError not_found(const std::string& message, const std::string& param, const std::string& code) {
  return ApiError(404, "invalid_request_error", message, param, code);
}

ApiError server_error(const std::string& message) {
  return ApiError(500, "server_error", message, {}, "server_error");
}

std::string excerpt(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  while (max_bytes > 0 && (static_cast<unsigned char>(s[max_bytes]) & 0xC0) == 0x80) --max_bytes;
  return std::string(s.substr(0, max_bytes)) + "... (" + std::to_string(s.size()) + " bytes)";
}

}  // namespace gptoss_server
