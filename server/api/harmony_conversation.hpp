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

// The spec of gptoss_grammar_create_harmony that holds the model's output to the same chat:
// Harmony structure, calls only to the declared functions with arguments valid under their
// schemas, tool_choice, and the response format on the final channel.
json constraint_spec(const ChatSetup& setup);

// Today's date in UTC, "YYYY-MM-DD".
std::string utc_date_today();

}  // namespace gptoss_server
