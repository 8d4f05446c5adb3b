#pragma once
// The Responses API's output: output events -> the streaming events (each with its
// sequence_number, output_index, content_index, item_id) and the Response object. The
// non-streaming path runs the same code and keeps only response(), so a stream's final
// response equals the non-streaming one for the same tokens.
#include <nlohmann/json.hpp>

#include <gptoss.h>

#include <string>
#include <vector>

#include "engine/generation.hpp"

namespace gptoss_server {

using nlohmann::json;

class ResponsesFormatter {
 public:
  // `base`: the Response object before generation (id, created_at, model, echoed request
  // parameters; status, output, usage are set here).
  ResponsesFormatter(gptoss_tokenizer_t tokenizer, json base, bool include_logprobs);

  // response.created, response.in_progress.
  std::vector<json> start();
  std::vector<json> on_events(const std::vector<OutputEvent>& events);
  // The generation ended: closes an open item and sets status, usage and error.
  std::vector<json> finish(const Finish& finish);
  // Turns the response into a failed one (e.g. it could not be stored).
  void fail(const std::string& message);
  // Exactly one of response.completed / response.incomplete / response.failed (the last after
  // an `error` event), carrying the whole Response.
  std::vector<json> terminal();

  const json& response() const { return response_; }

 private:
  json event(const char* type, json fields);
  void begin_item(const MessageHeader& header);
  void delta(const OutputEvent& e);
  void end_item(const char* status);

  gptoss_tokenizer_t tokenizer_;
  json response_;
  bool include_logprobs_;
  uint64_t sequence_ = 0;
  std::vector<json> out_;  // events of the call in progress
  bool open_ = false;
  json item_;   // the open item
  json logprobs_ = json::array();
};

}  // namespace gptoss_server
