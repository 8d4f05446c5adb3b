#pragma once
// Object ids in OpenAI's style: a prefix and random hex ("resp_", "msg_", "rs_", "fc_",
// "call_", "chatcmpl-", "cmpl-"). Any thread.
#include <string>

namespace gptoss_server {

std::string new_id(const char* prefix, size_t hex_digits = 48);

}  // namespace gptoss_server
