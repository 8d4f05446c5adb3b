#include "libgptoss/harmony/message.hpp"

namespace gptoss::harmony {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::system: return "system";
    case Role::developer: return "developer";
    case Role::user: return "user";
    case Role::assistant: return "assistant";
    case Role::tool: return "tool";
  }
  return "user";
}

std::optional<Role> role_from_name(std::string_view name) {
  for (Role r : {Role::system, Role::developer, Role::user, Role::assistant, Role::tool})
    if (role_name(r) == name) return r;
  return std::nullopt;
}

Message Message::text(Role role, std::string text) {
  Message m;
  m.role = role;
  m.content.push_back(TextContent{std::move(text)});
  return m;
}

}  // namespace gptoss::harmony
