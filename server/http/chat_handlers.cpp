// /v1/chat/completions and /v1/completions: n choices (one job each), plain or streamed as
// `data:` chunks ending with [DONE].
#include <spdlog/spdlog.h>

#include <ctime>

#include "api/api_error.hpp"
#include "api/chat_format.hpp"
#include "api/harmony_conversation.hpp"
#include "api/ids.hpp"
#include "engine/text_stream.hpp"
#include "http/app.hpp"
#include "http/streaming.hpp"

namespace gptoss_server {

using nlohmann::json;

namespace {

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
json total_usage(const ChoicesRun<Choice>& run) {
  Usage total;
  for (size_t i = 0; i < run.finishes.size(); ++i) {
    const Usage& u = run.finishes[i]->usage;
    if (run.owns_prompt[i]) {
      total.prompt_tokens += u.prompt_tokens;
      total.cached_tokens += u.cached_tokens;
    }
    total.output_tokens += u.output_tokens;
    total.reasoning_tokens += u.reasoning_tokens;
  }
  return chat_usage(total);
}

std::shared_ptr<Job> submit_or_cancel(Scheduler& scheduler, GenerationSpec spec, std::vector<std::shared_ptr<Job>>& jobs) {
  try {
    return scheduler.submit(std::move(spec));
  } catch (...) {
    for (auto& job : jobs) job->cancel();
    throw;
  }
}

json error_body(const Finish& f) {
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
GenerationSpec choice_spec(const GenerationSpec& spec, int i) {
  GenerationSpec s = spec;
  if (s.sampling.seed) *s.sampling.seed += uint64_t(i);
  return s;
}

std::string decode_text(gptoss_tokenizer_t tokenizer, const std::vector<uint32_t>& tokens) {
  Utf8Stream utf8;
  std::string text;
  for (uint32_t t : tokens) text += utf8.feed(token_bytes(tokenizer, t));
  return text + utf8.flush();
}

}  // namespace

void App::chat_completions(const httplib::Request& req, httplib::Response& res) {
  ChatRequest r = parse_chat_request(req.body);
  check_model(r.model);
  check_generations(size_t(r.n), "n");
  for (const auto& type : r.setup.skipped_tools)
    spdlog::warn("/v1/chat/completions: a '{}' tool is not offered to the model (only function tools are)", type);
  const json conversation = harmony_conversation(r.setup, r.messages, conversation_date(), "messages");
  GenerationSpec spec;
  spec.prompt = render_prompt(conversation, "messages");
  spec.sampling = r.options.sampling;
  spec.max_tokens = output_budget(spec.prompt.size(), r.options.max_tokens);
  spec.stop = r.options.stop;
  spec.grammar = constraint_grammar(r.setup, "tools", "response_format");
  spec.max_reasoning_tokens = reasoning_budget(r.setup, r.options.max_reasoning_tokens);
  budget_structured_output(spec, r.setup, r.options, "messages");

  auto run = std::make_shared<ChoicesRun<ChatChoice>>(
      ClientConnection(req.remote_addr, req.remote_port, req.local_port),
      json{{"id", new_id("chatcmpl-", 32)}, {"created", int64_t(std::time(nullptr))}, {"model", options_.model_name},
           {"system_fingerprint", nullptr}},
      r.include_usage);
  for (int i = 0; i < r.n; ++i) {
    run->jobs.push_back(submit_or_cancel(*engine().scheduler, choice_spec(spec, i), run->jobs));
    run->choices.emplace_back(engine().tokenizer.get(), i, r.options.sampling.logprobs >= 0);
    run->owns_prompt.push_back(i == 0);
  }
  run->finishes.resize(run->jobs.size());
  respond(run, res, r.stream, "chat.completion", "chat.completion.chunk", hold_active());
}

void App::completions(const httplib::Request& req, httplib::Response& res) {
  CompletionsRequest r = parse_completions_request(req.body);
  check_model(r.model);
  check_generations(r.prompts.size() * size_t(r.n), "n");
  gptoss_tokenizer_t tokenizer = engine().tokenizer.get();
  auto run = std::make_shared<ChoicesRun<CompletionChoice>>(
      ClientConnection(req.remote_addr, req.remote_port, req.local_port),
      json{{"id", new_id("cmpl-", 32)}, {"created", int64_t(std::time(nullptr))}, {"model", options_.model_name}},
      r.include_usage);
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    const CompletionPrompt& prompt = r.prompts[p];
    const std::string param = r.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(p) + "]";
    // Raw text: special-token strings (<|start|>...) are the tokens, so a hand-written Harmony
    // prompt works.
    std::vector<uint32_t> tokens = prompt.text ? encode(tokenizer, *prompt.text, true) : prompt.tokens;
    for (uint32_t t : tokens)
      if (t >= engine().vocab_size)
        throw invalid_request("Invalid token id " + std::to_string(t) + " in '" + param + "': the vocabulary has " +
                                  std::to_string(engine().vocab_size) + " tokens.",
                              param, "invalid_value");
    if (tokens.empty()) throw invalid_request("The prompt '" + param + "' is empty.", param, "invalid_value");
    if (tokens.size() >= options_.engine.context_length)
      throw invalid_request("This model's maximum context length is " + std::to_string(options_.engine.context_length) +
                                " tokens. However, your prompt has " + std::to_string(tokens.size()) + " tokens.",
                            param, "context_length_exceeded");
    const std::string echo = r.echo ? (prompt.text ? *prompt.text : decode_text(tokenizer, tokens)) : "";
    GenerationSpec spec;
    spec.prompt = std::move(tokens);
    spec.sampling = r.options.sampling;
    spec.max_tokens = output_budget(spec.prompt.size(), r.options.max_tokens);
    spec.harmony = false;
    spec.stop = r.options.stop;
    for (int j = 0; j < r.n; ++j) {
      run->jobs.push_back(submit_or_cancel(*engine().scheduler, choice_spec(spec, j), run->jobs));
      run->choices.emplace_back(tokenizer, int(run->choices.size()), r.options.sampling.logprobs, echo);
      run->owns_prompt.push_back(j == 0);
    }
  }
  run->finishes.resize(run->jobs.size());
  respond(run, res, r.stream, "text_completion", "text_completion", hold_active());
}

}  // namespace gptoss_server
