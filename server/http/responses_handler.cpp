// /v1/responses: create (plain or streaming), retrieve, delete, input items.
#include <spdlog/spdlog.h>

#include <ctime>

#include "api/api_error.hpp"
#include "api/harmony_conversation.hpp"
#include "api/ids.hpp"
#include "api/json_reader.hpp"
#include "api/responses_format.hpp"
#include "http/handlers.hpp"
#include "http/streaming.hpp"

namespace gptoss_server {

using nlohmann::json;

namespace {

// One response being generated. It lives as long as its request (a stream: until its
// response object is gone), and on its end the job is cancelled if it still runs (an
// exception, a client gone before the first event) and the response is no longer in flight.
struct ResponseRun {
  ResponseRun(std::shared_ptr<Job> j, ResponsesFormatter f, ClientConnection c, std::string i, int64_t t, bool s,
              std::shared_ptr<const json> items, InflightResponses* in)
      : job(std::move(j)), formatter(std::move(f)), client(std::move(c)), id(std::move(i)), created_at(t), store(s),
        input_items(std::move(items)), inflight(in) {}
  ResponseRun(const ResponseRun&) = delete;
  ResponseRun& operator=(const ResponseRun&) = delete;

  std::shared_ptr<Job> job;
  ResponsesFormatter formatter;
  ClientConnection client;
  std::string id;
  int64_t created_at;
  bool store;
  std::optional<std::string> store_failure;  // the store refused the finished response
  std::shared_ptr<const json> input_items;  // shared with the in-flight entry
  InflightResponses* inflight;

  ~ResponseRun() {
    job->cancel();
    inflight->remove(id);
  }
};

const char* id_prefix(const json& item) {
  const std::string type = item.value("type", "message");
  if (type == "function_call") return "fc_";
  if (type == "function_call_output") return "fco_";
  if (type == "reasoning") return "rs_";
  return "msg_";
}

json base_response(const ResponsesRequest& r, const std::string& id, int64_t created_at, const std::string& model) {
  auto optional = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json base = {{"id", id},
               {"object", "response"},
               {"created_at", created_at},
               {"status", "in_progress"},
               {"background", false},
               {"closed_by_budget", false},
               {"error", nullptr},
               {"incomplete_details", nullptr},
               {"instructions", optional(r.setup.instructions)},
               {"max_output_tokens", optional(r.options.max_tokens)},
               {"metadata", r.metadata.is_null() ? json::object() : r.metadata},
               {"model", model},
               {"output", json::array()},
               {"parallel_tool_calls", r.setup.parallel_tool_calls},
               {"previous_response_id", optional(r.previous_response_id)},
               {"reasoning", r.reasoning_echo},
               {"store", r.store},
               {"temperature", r.options.sampling.temperature},
               {"text", r.text_echo},
               {"tool_choice", r.tool_choice_echo},
               {"tools", r.tools_echo},
               {"top_p", r.options.sampling.top_p},
               {"truncation", r.truncation},
               {"usage", nullptr}};
  if (r.include_logprobs || r.options.sampling.logprobs > 0) base["top_logprobs"] = std::max(0, r.options.sampling.logprobs);
  if (!r.user.is_null()) base["user"] = r.user;
  return base;
}

// The generation ended: closes the response, stores it when asked (a failure to store fails
// it), and gives the last events.
std::vector<json> complete_response(ResponseStore& store, ResponseRun& run, const Finish& finish) {
  std::vector<json> events = run.formatter.finish(finish);
  const json& response = run.formatter.response();
  // A DELETE during generation cancels the job: such a response is not stored.
  if (run.store && !run.job->cancelled() && finish.reason != FinishReason::cancelled) {
    try {
      store.put({run.id, run.created_at, response, *run.input_items});
    } catch (const std::exception& e) {
      spdlog::error("response store: cannot store {}: {}", run.id, e.what());
      run.store_failure = e.what();
      run.formatter.fail(std::string("The response was generated but could not be stored: ") +
                         e.what());
    }
  }
  for (auto& e : run.formatter.terminal()) events.push_back(std::move(e));
  return events;
}

}  // namespace

void create_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  ResponsesRequest r = parse_responses_request(req.body);
  ctx.check_model(r.model);
  for (const auto& type : r.setup.skipped_tools)
    spdlog::warn("/v1/responses: a '{}' tool is not offered to the model (only function tools are)", type);

  // A response to store fails now, not after its generation, while the store is unreachable.
  if (r.store) ctx.store->ping();

  // The conversation so far: a stored response's input and output, then this request's input.
  json input_items = json::array();
  std::vector<ConversationItem> items;
  if (r.previous_response_id) {
    auto previous = ctx.store->get(*r.previous_response_id);
    if (!previous && ctx.inflight.contains(*r.previous_response_id))
      throw invalid_request("Previous response with id '" + *r.previous_response_id +
                                "' is still being generated: continue from it once it has completed.",
                            "previous_response_id", "previous_response_in_progress");
    if (!previous)
      throw invalid_request("Previous response with id '" + *r.previous_response_id + "' not found.",
                            "previous_response_id", "previous_response_not_found");
    input_items = std::move(previous->input_items);
    for (const auto& item : previous->response["output"]) input_items.push_back(item);
    items = parse_conversation_items(input_items, "previous_response_id");
  }
  for (auto& item : r.input_items) {
    if (!item.contains("id")) item["id"] = new_id(id_prefix(item));
    input_items.push_back(std::move(item));
  }
  items.insert(items.end(), r.input.begin(), r.input.end());

  auto job = ctx.engine().scheduler->submit(
      ctx.harmony_spec(r.setup, items, r.options, "input", "text.format"));

  const std::string id = new_id("resp_");
  const int64_t created_at = int64_t(std::time(nullptr));
  json base = base_response(r, id, created_at, ctx.options.model_name);
  auto shared_items = std::make_shared<const json>(std::move(input_items));
  ctx.inflight.add(id, job, base, shared_items);
  auto run = std::make_shared<ResponseRun>(
      job, ResponsesFormatter(ctx.engine().tokenizer.get(), base, r.include_logprobs),
      current_client(), id, created_at, r.store, std::move(shared_items), &ctx.inflight);

  if (!r.stream) {
    std::optional<Finish> finish;
    follow_jobs({job}, run->client,
                [&](size_t, std::vector<OutputEvent>& events) {
                  run->formatter.on_events(events);
                  return true;
                },
                [&](size_t, const Finish& f) {
                  finish = f;
                  complete_response(*ctx.store, *run, f);
                  return true;
                });
    if (!finish) return;  // the client is gone
    if (run->store_failure)
      throw StoreError("the response was generated but could not be stored: " +
                       *run->store_failure);
    const json& response = run->formatter.response();
    if (response["status"] == "failed") throw server_error(response["error"]["message"].get<std::string>());
    send_json(res, 200, response);
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&ctx, run, active = ctx.hold_active()](size_t, httplib::DataSink& sink) {
        auto write_all = [&](const std::vector<json>& events) {
          for (const auto& e : events)
            if (!write_sse(sink, e, true)) return false;
          return true;
        };
        try {
          if (write_all(run->formatter.start()))
            follow_jobs(
                {run->job}, run->client,
                [&](size_t, std::vector<OutputEvent>& events) {
                  return write_all(run->formatter.on_events(events));
                },
                [&](size_t, const Finish& f) {
                  return write_all(complete_response(*ctx.store, *run, f));
                });
          else
            run->job->cancel();
        } catch (const std::exception& e) {
          // Never a dropped connection: the stream ends with response.failed.
          spdlog::error("/v1/responses {}: {}", run->id, e.what());
          run->job->cancel();
          run->formatter.fail(std::string("Internal server error: ") + e.what());
          write_all(run->formatter.terminal());
        }
        sink.done();
        return true;
      });
}

void get_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  if (auto stored = ctx.store->get(id)) {
    send_json(res, 200, stored->response);
    return;
  }
  if (auto snapshot = ctx.inflight.snapshot(id)) {
    send_json(res, 200, *snapshot);
    return;
  }
  throw not_found("Response with id '" + id + "' not found.", "response_id");
}

void delete_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  const bool cancelled = ctx.inflight.cancel(id);
  const bool removed = ctx.store->remove(id);
  if (!cancelled && !removed) throw not_found("Response with id '" + id + "' not found.", "response_id");
  send_json(res, 200, {{"id", id}, {"object", "response.deleted"}, {"deleted", true}});
}

void list_input_items(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  // A stored response's input, or the input of one still being generated.
  auto stored = ctx.store->get(id);
  std::optional<json> all_items;
  if (stored)
    all_items = std::move(stored->input_items);
  else if (auto running = ctx.inflight.input_items(id)) all_items = *running;
  if (!all_items) throw not_found("Response with id '" + id + "' not found.", "response_id");
  // Query parameters are strings: parsed like a JSON body so errors name them the same way.
  json query = json::object();
  for (const char* key : {"order", "after"})
    if (req.has_param(key)) query[key] = req.get_param_value(key);
  if (req.has_param("limit")) {
    const std::string limit = req.get_param_value("limit");
    char* end = nullptr;
    const long long n = std::strtoll(limit.c_str(), &end, 10);
    query["limit"] = end && *end == '\0' && !limit.empty() ? json(n) : json(limit);
  }
  const JsonReader q(query, "");
  const size_t limit = size_t(q.integer("limit", 1, 100).value_or(20));
  const std::string order = q.string("order").value_or("desc");
  if (order != "asc" && order != "desc")
    throw invalid_request("Invalid value for 'order': expected 'asc' or 'desc', got '" + order + "'.", "order",
                          "invalid_value");
  json items = std::move(*all_items);
  if (order == "desc") std::reverse(items.begin(), items.end());
  size_t start = 0;
  if (auto after = q.string("after")) {
    while (start < items.size() && items[start].value("id", "") != *after) ++start;
    if (start == items.size())
      throw invalid_request("Invalid value for 'after': no item '" + *after + "' in this response's input.", "after",
                            "invalid_value");
    ++start;
  }
  json page = json::array();
  for (size_t i = start; i < items.size() && page.size() < limit; ++i) page.push_back(items[i]);
  const bool more = start + page.size() < items.size();
  send_json(res, 200,
            {{"object", "list"},
             {"data", page},
             {"first_id", page.empty() ? json(nullptr) : page.front()["id"]},
             {"last_id", page.empty() ? json(nullptr) : page.back()["id"]},
             {"has_more", more}});
}

}  // namespace gptoss_server
