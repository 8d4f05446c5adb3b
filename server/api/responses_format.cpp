#include "api/responses_format.hpp"

#include "api/chat_format.hpp"
#include "api/ids.hpp"
#include "api/logprobs.hpp"
#include "api/output_kind.hpp"

namespace gptoss_server {

ResponsesFormatter::ResponsesFormatter(gptoss_tokenizer_t tokenizer, json base, bool include_logprobs)
    : tokenizer_(tokenizer), response_(std::move(base)), include_logprobs_(include_logprobs) {
  response_["object"] = "response";
  response_["status"] = "in_progress";
  response_["output"] = json::array();
  response_["error"] = nullptr;
  response_["incomplete_details"] = nullptr;
  response_["usage"] = nullptr;
}

json ResponsesFormatter::event(const char* type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = sequence_++;
  out_.push_back(fields);
  return fields;
}

std::vector<json> ResponsesFormatter::start() {
  event("response.created", {{"response", response_}});
  event("response.in_progress", {{"response", response_}});
  return std::exchange(out_, {});
}

std::vector<json> ResponsesFormatter::on_events(const std::vector<OutputEvent>& events) {
  for (const auto& e : events) {
    switch (e.kind) {
      case OutputEvent::Kind::begin: begin_item(e.header); break;
      case OutputEvent::Kind::delta: delta(e); break;
      case OutputEvent::Kind::end: end_item(e.complete ? "completed" : "incomplete"); break;
    }
  }
  return std::exchange(out_, {});
}

namespace {
json text_part(bool with_logprobs) {
  json part = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
  if (with_logprobs) part["logprobs"] = json::array();
  return part;
}
}  // namespace

void ResponsesFormatter::begin_item(const MessageHeader& header) {
  if (open_) end_item("completed");
  const size_t index = response_["output"].size();
  std::string name;
  switch (output_kind(header, &name)) {
    case OutputKind::function_call:
      item_ = {{"id", new_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
               {"arguments", ""}, {"call_id", new_id("call_", 24)}, {"name", name}};
      break;
    case OutputKind::reasoning:
      item_ = {{"id", new_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()},
               {"content", json::array()}, {"status", "in_progress"}};
      break;
    case OutputKind::message:
      item_ = {{"id", new_id("msg_")}, {"type", "message"}, {"status", "in_progress"},
               {"content", json::array()}, {"role", "assistant"}};
      if (header.channel == "commentary") item_["phase"] = "commentary";
      break;
  }
  open_ = true;
  logprobs_ = json::array();
  event("response.output_item.added", {{"output_index", index}, {"item", item_}});
  const std::string& type = item_["type"].get_ref<const std::string&>();
  json part;
  if (type == "message") part = text_part(include_logprobs_);
  else if (type == "reasoning") part = {{"type", "reasoning_text"}, {"text", ""}};
  else return;
  event("response.content_part.added",
        {{"item_id", item_["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  item_["content"].push_back(std::move(part));
}

void ResponsesFormatter::delta(const OutputEvent& e) {
  if (!open_) return;
  const size_t index = response_["output"].size();
  const std::string& type = item_["type"].get_ref<const std::string&>();
  if (type == "function_call") {
    item_["arguments"] = item_["arguments"].get<std::string>() + e.text;
    event("response.function_call_arguments.delta", {{"item_id", item_["id"]}, {"output_index", index}, {"delta", e.text}});
    return;
  }
  json& part = item_["content"][0];
  part["text"] = part["text"].get<std::string>() + e.text;
  if (type == "reasoning") {
    event("response.reasoning_text.delta",
          {{"item_id", item_["id"]}, {"output_index", index}, {"content_index", 0}, {"delta", e.text}});
    return;
  }
  json lps = include_logprobs_ ? token_logprobs_json(tokenizer_, e.logprobs) : json::array();
  for (const auto& lp : lps) logprobs_.push_back(lp);
  if (include_logprobs_) part["logprobs"] = logprobs_;
  event("response.output_text.delta", {{"item_id", item_["id"]}, {"output_index", index}, {"content_index", 0},
                                       {"delta", e.text}, {"logprobs", std::move(lps)}});
}

void ResponsesFormatter::end_item(const char* status) {
  if (!open_) return;
  open_ = false;
  const size_t index = response_["output"].size();
  const json id = item_["id"];
  const std::string type = item_["type"];
  if (type == "function_call") {
    event("response.function_call_arguments.done",
          {{"item_id", id}, {"output_index", index}, {"arguments", item_["arguments"]}, {"name", item_["name"]}});
  } else {
    const json& part = item_["content"][0];
    if (type == "reasoning")
      event("response.reasoning_text.done",
            {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", part["text"]}});
    else
      event("response.output_text.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0},
                                          {"text", part["text"]}, {"logprobs", logprobs_}});
    event("response.content_part.done", {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  }
  item_["status"] = status;
  event("response.output_item.done", {{"output_index", index}, {"item", item_}});
  response_["output"].push_back(std::move(item_));
  item_ = nullptr;
}

std::vector<json> ResponsesFormatter::finish(const Finish& finish) {
  const Usage& u = finish.usage;
  response_["usage"] = {{"input_tokens", u.prompt_tokens},
                        {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
                        {"output_tokens", u.output_tokens},
                        {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}},
                        {"total_tokens", u.prompt_tokens + u.output_tokens}};
  if (u.speculative) response_["usage"]["speculative"] = speculative_usage(u);  // extension
  // Extension: the token limit closed a structured answer (docs/server.md).
  response_["closed_by_budget"] = finish.closed_by_budget;
  switch (finish.reason) {
    case FinishReason::stop:
      end_item("completed");
      response_["status"] = "completed";
      break;
    case FinishReason::length:
      end_item("incomplete");
      response_["status"] = "incomplete";
      response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
      break;
    case FinishReason::error:
      end_item("incomplete");
      fail("The server had an error while generating the response: " + finish.error);
      break;
    case FinishReason::cancelled:
      end_item("incomplete");
      fail("The response was cancelled.");
      break;
  }
  return std::exchange(out_, {});
}

void ResponsesFormatter::fail(const std::string& message) {
  response_["status"] = "failed";
  response_["incomplete_details"] = nullptr;
  response_["error"] = {{"code", "server_error"}, {"message", message}};
}

std::vector<json> ResponsesFormatter::terminal() {
  const std::string status = response_["status"];
  if (status == "completed") {
    event("response.completed", {{"response", response_}});
  } else if (status == "incomplete") {
    event("response.incomplete", {{"response", response_}});
  } else {
    event("error", {{"code", "server_error"}, {"message", response_["error"]["message"]}, {"param", nullptr}});
    event("response.failed", {{"response", response_}});
  }
  return std::exchange(out_, {});
}

}  // namespace gptoss_server
