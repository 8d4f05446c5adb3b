#pragma once
// A chat (setup + conversation items) as the Harmony conversation JSON that
// gptoss_harmony_render takes (docs/harmony.md): the system message (identity, date,
// reasoning effort, channels), the developer message (instructions, function tools, response
// format), then the turns.
#include <string>
#include <vector>

#include "api/request.hpp"

namespace gptoss_server {

// `date` is the conversation start date written into the system message ("2025-06-28").
// Throws a 400 ApiError for a function_call_output whose call_id matches no function_call.
// `items_param` names the request parameter that holds the items ("input", "messages").
json harmony_conversation(const ChatSetup& setup, const std::vector<ConversationItem>& items,
                          const std::string& date, const char* items_param);

// Today's date in UTC, "YYYY-MM-DD".
std::string utc_date_today();

}  // namespace gptoss_server
