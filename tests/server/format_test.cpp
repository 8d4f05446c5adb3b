// Output events to API objects: the Responses event order and fields, the final Response the
// stream ends with, and Chat / Completions choices.
#include <catch2/catch.hpp>

#include <set>

#include <gptoss.hpp>
#include "api/chat_format.hpp"
#include "api/responses_format.hpp"
#include "support/real_tokenizer.hpp"

using namespace gptoss_server;
using nlohmann::json;

namespace {

using gptoss::test::real_tokenizer;

OutputEvent begin(std::string channel, std::string recipient = "") {
  OutputEvent e;
  e.kind = OutputEvent::Kind::begin;
  e.header.channel = std::move(channel);
  e.header.recipient = std::move(recipient);
  return e;
}
OutputEvent delta(std::string text, std::vector<TokenLogprob> lps = {}) {
  OutputEvent e;
  e.text = std::move(text);
  e.logprobs = std::move(lps);
  return e;
}
OutputEvent end(bool complete = true) {
  OutputEvent e;
  e.kind = OutputEvent::Kind::end;
  e.complete = complete;
  return e;
}

// Reasoning, a preamble, a tool call, in two batches the way a scheduler step delivers them.
std::vector<std::vector<OutputEvent>> sample_output() {
  return {{begin("analysis"), delta("Let me "), delta("think."), end(), begin("commentary")},
          {delta("Checking."), end(), begin("commentary", "functions.get_weather"), delta("{\"city\":"),
           delta("\"Oslo\"}"), end()}};
}

std::vector<json> run_responses(ResponsesFormatter& f, const Finish& finish) {
  std::vector<json> all = f.start();
  for (const auto& batch : sample_output())
    for (auto& e : f.on_events(batch)) all.push_back(std::move(e));
  for (auto& e : f.finish(finish)) all.push_back(std::move(e));
  for (auto& e : f.terminal()) all.push_back(std::move(e));
  return all;
}

std::vector<std::string> types(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e["type"]);
  return out;
}

}  // namespace

TEST_CASE("responses stream: events in order, indexes and ids consistent, final = response()",
          "[server][format]") {
  auto tok = real_tokenizer();
  ResponsesFormatter f(tok.get(), {{"id", "resp_1"}, {"model", "m"}}, false);
  const auto events = run_responses(f, {FinishReason::stop, {}, {10, 2, 20, 5}});
  CHECK(types(events) == std::vector<std::string>{
                             "response.created", "response.in_progress",
                             "response.output_item.added", "response.content_part.added",
                             "response.reasoning_text.delta", "response.reasoning_text.delta",
                             "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
                             "response.output_item.added", "response.content_part.added",
                             "response.output_text.delta", "response.output_text.done",
                             "response.content_part.done", "response.output_item.done",
                             "response.output_item.added", "response.function_call_arguments.delta",
                             "response.function_call_arguments.delta", "response.function_call_arguments.done",
                             "response.output_item.done", "response.completed"});
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i]["sequence_number"] == i);
  // Indexes and ids.
  std::set<std::string> ids;
  for (const auto& e : events) {
    if (e["type"] == "response.output_item.added") {
      CHECK(e["output_index"] == ids.size());
      CHECK(ids.insert(e["item"]["id"].get<std::string>()).second);
      if (e["item"]["type"] != "function_call") CHECK(e["item"]["content"] == json::array());
    }
    if (e.contains("item_id")) CHECK(ids.count(e["item_id"].get<std::string>()) == 1);
    if (e.contains("content_index")) CHECK(e["content_index"] == 0);
  }
  const json& r = f.response();
  CHECK(events.back()["response"] == r);
  CHECK(r["status"] == "completed");
  REQUIRE(r["output"].size() == 3);
  CHECK(r["output"][0]["type"] == "reasoning");
  CHECK(r["output"][0]["content"] == json::parse(R"([{"type": "reasoning_text", "text": "Let me think."}])"));
  CHECK(r["output"][1]["type"] == "message");
  CHECK(r["output"][1]["phase"] == "commentary");
  CHECK(r["output"][1]["content"][0]["text"] == "Checking.");
  CHECK(r["output"][1]["content"][0]["annotations"] == json::array());
  CHECK(r["output"][2]["type"] == "function_call");
  CHECK(r["output"][2]["name"] == "get_weather");
  CHECK(r["output"][2]["arguments"] == "{\"city\":\"Oslo\"}");
  CHECK(r["output"][2]["call_id"].get<std::string>().rfind("call_", 0) == 0);
  for (const auto& item : r["output"]) CHECK(item["status"] == "completed");
  // output_item.done repeats type, id and call_id.
  CHECK(events[19]["item"] == r["output"][2]);
  CHECK(r["usage"] == json::parse(R"({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 2},
      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 30})"));
  CHECK(r["id"] == "resp_1");
}

TEST_CASE("responses stream: the length limit makes the response and its last item incomplete",
          "[server][format]") {
  auto tok = real_tokenizer();
  ResponsesFormatter f(tok.get(), {{"id", "resp_2"}}, false);
  f.start();
  f.on_events({begin("final"), delta("cut sho"), end(false)});
  f.finish({FinishReason::length, {}, {}});
  const auto last = f.terminal();
  REQUIRE(last.size() == 1);
  CHECK(last[0]["type"] == "response.incomplete");
  CHECK(last[0]["sequence_number"] == 8);
  CHECK(f.response()["status"] == "incomplete");
  CHECK(f.response()["incomplete_details"]["reason"] == "max_output_tokens");
  CHECK(f.response()["output"][0]["status"] == "incomplete");
}

TEST_CASE("responses stream: an engine error closes the open item and ends with error + failed",
          "[server][format]") {
  auto tok = real_tokenizer();
  ResponsesFormatter f(tok.get(), {{"id", "resp_3"}}, false);
  f.start();
  f.on_events({begin("final"), delta("partial")});
  const auto closing = f.finish({FinishReason::error, "device lost", {}});
  CHECK(types(closing) == std::vector<std::string>{"response.output_text.done", "response.content_part.done",
                                                   "response.output_item.done"});
  const auto last = f.terminal();
  CHECK(types(last) == std::vector<std::string>{"error", "response.failed"});
  CHECK(last[0]["message"].get<std::string>().find("device lost") != std::string::npos);
  CHECK(f.response()["status"] == "failed");
  CHECK(f.response()["error"]["code"] == "server_error");
  // A store failure after a good generation turns it into a failure too.
  ResponsesFormatter g(tok.get(), {{"id", "resp_4"}}, false);
  g.start();
  g.finish({FinishReason::stop, {}, {}});
  g.fail("could not be stored");
  CHECK(types(g.terminal()) == std::vector<std::string>{"error", "response.failed"});
}

TEST_CASE("responses: output_text log-probabilities in the deltas and the final part", "[server][format]") {
  auto tok = real_tokenizer();
  ResponsesFormatter f(tok.get(), {{"id", "resp_5"}}, true);
  f.start();
  const uint32_t hello = gptoss::encode(tok.get(), "Hello").at(0);
  const auto events = f.on_events({begin("final"), delta("Hello", {{hello, -0.5f, {{hello, -0.5f}, {13, -2.0f}}}}), end()});
  const json& d = events.at(2);
  REQUIRE(d["type"] == "response.output_text.delta");
  CHECK(d["logprobs"] == json::parse(R"([{"token": "Hello", "logprob": -0.5, "bytes": [72, 101, 108, 108, 111],
      "top_logprobs": [{"token": "Hello", "logprob": -0.5, "bytes": [72, 101, 108, 108, 111]},
                       {"token": ".", "logprob": -2.0, "bytes": [46]}]}])"));
  f.finish({FinishReason::stop, {}, {}});
  CHECK(f.response()["output"][0]["content"][0]["logprobs"] == d["logprobs"]);
}

TEST_CASE("chat choice: deltas and the non-streaming choice agree", "[server][format]") {
  auto tok = real_tokenizer();
  ChatChoice c(tok.get(), 0, false);
  std::vector<json> entries;
  for (const auto& batch : sample_output())
    for (auto& e : c.on_events(batch)) entries.push_back(std::move(e));
  CHECK(entries.front()["delta"] == json::parse(R"({"role": "assistant", "content": ""})"));
  std::string reasoning, content, args;
  for (const auto& e : entries) {
    const json& d = e["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) {
      CHECK(d["tool_calls"][0]["index"] == 0);
      args += d["tool_calls"][0]["function"]["arguments"].get<std::string>();
    }
  }
  const Finish finish{FinishReason::stop, {}, {}};
  CHECK(c.finish_entry(finish)["finish_reason"] == "tool_calls");
  const json choice = c.choice(finish);
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["reasoning_content"] == reasoning);
  CHECK(choice["message"]["content"] == content);
  CHECK(choice["message"]["tool_calls"][0]["function"]["arguments"] == args);
  CHECK(choice["message"]["tool_calls"][0]["function"]["name"] == "get_weather");
  CHECK(choice["message"]["refusal"].is_null());
  CHECK(choice["logprobs"].is_null());
  // Without any answer text, content is null.
  ChatChoice empty(tok.get(), 1, false);
  empty.on_events({begin("analysis"), delta("hmm"), end()});
  CHECK(empty.choice({FinishReason::length, {}, {}})["message"]["content"].is_null());
  CHECK(empty.choice({FinishReason::length, {}, {}})["finish_reason"] == "length");
}

TEST_CASE("closed_by_budget: on the Response and its terminal event, on chat choices and their last chunk",
          "[server][format]") {
  auto tok = real_tokenizer();
  ResponsesFormatter f(tok.get(), {{"id", "resp_6"}, {"closed_by_budget", false}}, false);
  f.start();
  f.on_events({begin("final"), delta("{\"a\":\"\"}"), end()});
  f.finish({FinishReason::stop, {}, {}, true});
  const auto last = f.terminal();
  REQUIRE(last.size() == 1);
  CHECK(last[0]["type"] == "response.completed");
  CHECK(last[0]["response"]["closed_by_budget"] == true);
  CHECK(f.response()["status"] == "completed");
  ResponsesFormatter g(tok.get(), {{"id", "resp_7"}, {"closed_by_budget", false}}, false);
  g.start();
  g.finish({FinishReason::stop, {}, {}});
  CHECK(g.response()["closed_by_budget"] == false);

  ChatChoice c(tok.get(), 0, false);
  c.on_events({begin("commentary", "functions.get_weather"), delta("{}"), end()});
  const Finish closed{FinishReason::stop, {}, {}, true};
  CHECK(c.finish_entry(closed)["closed_by_budget"] == true);
  CHECK(c.finish_entry(closed)["finish_reason"] == "tool_calls");
  CHECK(c.choice(closed)["closed_by_budget"] == true);
  CHECK(c.choice({FinishReason::stop, {}, {}})["closed_by_budget"] == false);
}

TEST_CASE("completion choice: echo, text and legacy logprobs", "[server][format]") {
  auto tok = real_tokenizer();
  const auto ids = gptoss::encode(tok.get(), " there");
  CompletionChoice c(tok.get(), 2, 1, "Hi");
  std::vector<TokenLogprob> lps;
  for (uint32_t t : ids) lps.push_back({t, -1.0f, {{t, -1.0f}}});
  const auto entries = c.on_events({begin(""), delta(" there", lps), end()});
  REQUIRE(entries.size() == 2);
  CHECK(entries[0]["text"] == "Hi");
  CHECK(entries[1]["text"] == " there");
  CHECK(entries[1]["logprobs"]["text_offset"][0] == 2);
  const json choice = c.choice({FinishReason::stop, {}, {}});
  CHECK(choice["index"] == 2);
  CHECK(choice["text"] == "Hi there");
  CHECK(choice["logprobs"]["tokens"].size() == ids.size());
  CHECK(choice["finish_reason"] == "stop");
}

TEST_CASE("completion choice: text_offset counts characters, not bytes", "[server][format]") {
  auto tok = real_tokenizer();
  // After the echo "é " (2 characters, 3 bytes): "ৰু" (2 characters, 6 bytes), then ASCII.
  const std::string text = "ৰুAndroid philanth";
  const auto ids = gptoss::encode(tok.get(), text);
  CompletionChoice c(tok.get(), 0, 0, "é ");
  std::vector<TokenLogprob> lps;
  for (uint32_t t : ids) lps.push_back({t, -1.0f, {}});
  c.on_events({begin(""), delta(text, lps), end()});
  const json lp = c.choice({FinishReason::length, {}, {}})["logprobs"];
  std::string tokens;
  for (const auto& t : lp["tokens"]) tokens += "[" + t.get<std::string>() + "]";
  INFO(tokens);
  // Offsets in characters of "é ৰুAndroid philanth": ' philanth' starts at character 11.
  REQUIRE(lp["tokens"].size() >= 3);
  CHECK(lp["text_offset"][0] == 2);
  CHECK(lp["tokens"].back() == " philanth");
  CHECK(lp["text_offset"].back() == 11);
}

TEST_CASE("completion choice: tokens that end inside a character are named by their bytes",
          "[server][format]") {
  auto tok = real_tokenizer();
  // The byte tokens e4 and e5 each begin a three-byte character: as text both are U+FFFD, and
  // as keys of one top_logprobs object the second would overwrite the first.
  uint32_t e4 = 0, e5 = 0;
  for (uint32_t id = 1; id < 100000 && (e4 == 0 || e5 == 0); ++id) {
    const std::string_view bytes = gptoss::token_bytes(tok.get(), id);
    if (bytes == "\xe4") e4 = id;
    if (bytes == "\xe5") e5 = id;
  }
  REQUIRE(e4 != 0);
  REQUIRE(e5 != 0);
  const uint32_t hello = gptoss::encode(tok.get(), "Hello").at(0);
  CompletionChoice c(tok.get(), 0, 3, "");
  const std::vector<TokenLogprob> lps = {{e4, -0.5f, {{e4, -0.5f}, {e5, -1.5f}, {hello, -2.5f}}}};
  c.on_events({begin(""), delta("", lps), end()});
  const json lp = c.choice({FinishReason::length, {}, {}})["logprobs"];
  CHECK(lp["tokens"] == json::array({"bytes:\\xe4"}));
  CHECK(lp["top_logprobs"][0] ==
        json({{"bytes:\\xe4", -0.5}, {"bytes:\\xe5", -1.5}, {"Hello", -2.5}}));
  CHECK(lp["text_offset"] == json::array({0}));
}
