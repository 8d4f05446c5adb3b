#pragma once
// The choices of a Chat Completions or Completions request: n generations (one job each) run
// together, answered as one object or streamed as `data:` chunks ending with [DONE]. Choice
// is ChatChoice or CompletionChoice (api/chat_format.hpp).
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "api/api_error.hpp"
#include "api/chat_format.hpp"
#include "engine/scheduler.hpp"
#include "http/server_context.hpp"
#include "http/streaming.hpp"

namespace gptoss_server::choices {

using nlohmann::json;

// The choices of one request and what is needed to frame them.
template <typename Choice>
struct ChoicesRun {
  ChoicesRun(ClientConnection c, json e, bool usage) : client(std::move(c)), envelope(std::move(e)), include_usage(usage) {}
  ChoicesRun(const ChoicesRun&) = delete;
  ChoicesRun& operator=(const ChoicesRun&) = delete;

  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<Choice> choices;
  std::vector<bool> owns_prompt;  // counts its prompt in the usage (one job per prompt)
  std::vector<std::optional<Finish>> finishes;
  ClientConnection client;
  json envelope;  // id, created, model
  bool include_usage = false;

  // The request is over (answered, failed, or its stream gone): nothing of it keeps running.
  ~ChoicesRun() {
    for (auto& job : jobs) job->cancel();
  }
};

template <typename Choice>
inline json total_usage(const ChoicesRun<Choice>& run) {
  Usage total;
  for (size_t i = 0; i < run.finishes.size(); ++i) {
    const Usage& u = run.finishes[i]->usage;
    if (run.owns_prompt[i]) {
      total.prompt_tokens += u.prompt_tokens;
      total.cached_tokens += u.cached_tokens;
    }
    total.output_tokens += u.output_tokens;
    total.reasoning_tokens += u.reasoning_tokens;
    total.speculative |= u.speculative;
    total.drafted_tokens += u.drafted_tokens;
    total.accepted_tokens += u.accepted_tokens;
  }
  return chat_usage(total);
}

inline std::shared_ptr<Job> submit_or_cancel(Scheduler& scheduler, GenerationSpec spec,
                                             std::vector<std::shared_ptr<Job>>& jobs) {
  try {
    return scheduler.submit(std::move(spec));
  } catch (...) {
    for (auto& job : jobs) job->cancel();
    throw;
  }
}

inline json error_body(const Finish& f) {
  return server_error(f.reason == FinishReason::cancelled ? "The generation was cancelled."
                                                          : "The server had an error while generating: " + f.error)
      .to_json();
}

// Runs the choices to their end and answers: one object, or a stream of chunks.
template <typename Choice>
void respond(std::shared_ptr<ChoicesRun<Choice>> run, httplib::Response& res, bool stream, const char* object,
             const char* chunk_object, std::shared_ptr<void> active) {
  if (!stream) {
    const bool connected = follow_jobs(
        run->jobs, run->client,
        [&](size_t i, std::vector<OutputEvent>& events) {
          run->choices[i].on_events(events);
          return true;
        },
        [&](size_t i, const Finish& f) {
          run->finishes[i] = f;
          return true;
        });
    if (!connected) return;
    json choices = json::array();
    for (size_t i = 0; i < run->choices.size(); ++i) {
      const Finish& f = *run->finishes[i];
      if (f.reason == FinishReason::error || f.reason == FinishReason::cancelled) {
        send_json(res, 500, error_body(f));
        return;
      }
      choices.push_back(run->choices[i].choice(f));
    }
    json body = run->envelope;
    body["object"] = object;
    body["choices"] = std::move(choices);
    body["usage"] = total_usage(*run);
    send_json(res, 200, body);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [run, chunk_object, active](size_t, httplib::DataSink& sink) {
    auto chunk = [&](json choices) {
      json c = run->envelope;
      c["object"] = chunk_object;
      c["choices"] = std::move(choices);
      if (run->include_usage) c["usage"] = nullptr;
      return c;
    };
    bool failed = false;  // an error chunk was sent: the stream still ends with [DONE]
    try {
      follow_jobs(
          run->jobs, run->client,
          [&](size_t i, std::vector<OutputEvent>& events) {
            for (auto& entry : run->choices[i].on_events(events))
              if (!write_sse(sink, chunk(json::array({std::move(entry)})), false)) return false;
            return true;
          },
          [&](size_t i, const Finish& f) {
            run->finishes[i] = f;
            if (f.reason == FinishReason::error || f.reason == FinishReason::cancelled) {
              failed = write_sse(sink, error_body(f), false);
              return false;
            }
            // A choice that produced no events still announces its role first.
            std::vector<OutputEvent> none;
            for (auto& entry : run->choices[i].on_events(none))
              if (!write_sse(sink, chunk(json::array({std::move(entry)})), false)) return false;
            return write_sse(sink, chunk(json::array({run->choices[i].finish_entry(f)})), false);
          });
      bool all = true;
      for (const auto& f : run->finishes) all = all && f.has_value();
      if (all && !failed && run->include_usage) {
        json c = run->envelope;
        c["object"] = chunk_object;
        c["choices"] = json::array();
        c["usage"] = total_usage(*run);
        write_sse(sink, c, false);
      }
      if (all || failed) write_sse_done(sink);
    } catch (const std::exception& e) {
      spdlog::error("streaming {}: {}", chunk_object, e.what());
      for (auto& job : run->jobs) job->cancel();
      write_sse(sink, server_error(std::string("Internal server error: ") + e.what()).to_json(), false);
      write_sse_done(sink);
    }
    sink.done();
    return true;
  });
}

// Choice i of n: with a seed, each choice gets its own (seed + i), so choices differ and a
// request is still reproducible.
inline GenerationSpec choice_spec(const GenerationSpec& spec, int i) {
  GenerationSpec s = spec;
  if (s.sampling.seed) *s.sampling.seed += uint64_t(i);
  return s;
}

}  // namespace gptoss_server::choices
