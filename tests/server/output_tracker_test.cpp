// Sampled tokens to output events with the real tokenizer and the library's Harmony parser:
// messages announced before their text, tool calls by recipient, stop strings, recovery of
// malformed output, reasoning tokens, log-probabilities of content tokens only.
#include <catch2/catch.hpp>

#include <gptoss.hpp>
#include "engine/output_tracker.hpp"
#include "support/real_tokenizer.hpp"

using namespace gptoss_server;

namespace {

using gptoss::test::real_tokenizer;

struct Run {
  std::vector<OutputEvent> events;
  size_t reasoning_tokens = 0;
  bool stopped = false;

  // One line per event: "+channel/recipient", text, "-" (or "-cut").
  std::string trace() const {
    std::string s;
    for (const auto& e : events) {
      if (e.kind == OutputEvent::Kind::begin) s += "[+" + e.header.channel + "/" + e.header.recipient + "]";
      else if (e.kind == OutputEvent::Kind::delta) s += e.text;
      else s += e.complete ? "[-]" : "[-cut]";
    }
    return s;
  }
  size_t logprobs() const {
    size_t n = 0;
    for (const auto& e : events) n += e.logprobs.size();
    return n;
  }
};

Run track(gptoss_tokenizer_t tok, const std::string& output, bool harmony, std::vector<std::string> stop = {},
          bool cut = false) {
  auto tracker = harmony ? make_harmony_tracker(tok, stop) : make_text_tracker(tok, stop);
  Run run;
  for (uint32_t t : gptoss::encode(tok, output, GPTOSS_ENCODE_ALLOW_SPECIAL)) {
    TokenLogprob lp{t, -1.0f, {}};
    tracker->on_token(t, &lp, run.events);
    if (tracker->stopped()) break;
  }
  tracker->finish(run.events, cut);
  run.reasoning_tokens = tracker->reasoning_tokens();
  run.stopped = tracker->stopped();
  return run;
}

}  // namespace

TEST_CASE("harmony output: analysis, then the final answer", "[server][tracker]") {
  auto tok = real_tokenizer();
  const Run r = track(tok.get(),
                      "<|channel|>analysis<|message|>Think it over.<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>Paris.<|return|>",
                      true);
  CHECK(r.trace() == "[+analysis/]Think it over.[-][+final/]Paris.[-]");
  // Header, content and terminator tokens of the analysis message.
  const size_t analysis =
      gptoss::encode(tok.get(), "<|channel|>analysis<|message|>Think it over.<|end|>",
                     GPTOSS_ENCODE_ALLOW_SPECIAL)
          .size();
  CHECK(r.reasoning_tokens == analysis);
  // Only content tokens carry log-probabilities.
  const size_t content =
      gptoss::encode(tok.get(), "Think it over.", GPTOSS_ENCODE_ALLOW_SPECIAL).size() +
      gptoss::encode(tok.get(), "Paris.", GPTOSS_ENCODE_ALLOW_SPECIAL).size();
  CHECK(r.logprobs() == content);
}

TEST_CASE("harmony output: a tool call is a message to functions.NAME", "[server][tracker]") {
  auto tok = real_tokenizer();
  const Run r = track(tok.get(),
                      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>",
                      true);
  REQUIRE(r.events.size() >= 3);
  CHECK(r.events.front().header.recipient == "functions.get_weather");
  CHECK(r.events.front().header.channel == "commentary");
  CHECK(r.trace() == "[+commentary/functions.get_weather]{\"city\":\"Oslo\"}[-]");
  CHECK(is_answer(r.events.front().header) == false);
}

TEST_CASE("harmony output: a call on the analysis channel is not reasoning", "[server][tracker]") {
  auto tok = real_tokenizer();
  const std::string think = "<|channel|>analysis<|message|>Let me look.<|end|>";
  const Run r = track(tok.get(), think + "<|start|>assistant to=functions.lookup<|channel|>analysis <|constrain|>json<|message|>{}<|call|>",
                      true);
  CHECK(r.trace() == "[+analysis/]Let me look.[-][+analysis/functions.lookup]{}[-]");
  CHECK(r.reasoning_tokens == gptoss::encode(tok.get(), think, GPTOSS_ENCODE_ALLOW_SPECIAL).size());
}

TEST_CASE("harmony output: stop strings end the answer, not the reasoning", "[server][tracker]") {
  auto tok = real_tokenizer();
  const Run r = track(tok.get(),
                      "<|channel|>analysis<|message|>say STOP here<|end|>"
                      "<|start|>assistant<|channel|>final<|message|>one two STOP three<|return|>",
                      true, {"STOP"});
  CHECK(r.trace() == "[+analysis/]say STOP here[-][+final/]one two [-]");
  CHECK(r.stopped);
}

TEST_CASE("harmony output: malformed output is recovered as text, never an error", "[server][tracker]") {
  auto tok = real_tokenizer();
  // No <|channel|> at all: the whole output is a header that never ends.
  Run r = track(tok.get(), "just some words", true);
  CHECK(r.trace() == "[+/]just some words[-]");
  CHECK(r.logprobs() ==
        gptoss::encode(tok.get(), "just some words", GPTOSS_ENCODE_ALLOW_SPECIAL).size());
  // A stop token inside a header, then a well-formed message.
  r = track(tok.get(), "<|channel|>final The answer<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>", true);
  CHECK(r.trace() == "[+final/]The answer[-][+final/]ok[-]");
  // Cut by the length limit inside a message.
  r = track(tok.get(), "<|channel|>final<|message|>unfinished", true, {}, true);
  CHECK(r.trace() == "[+final/]unfinished[-cut]");
}

TEST_CASE("harmony output: a header the length limit cuts is not content", "[server][tracker]") {
  auto tok = real_tokenizer();
  // A tool call's header cut after its recipient: no text, no log-probabilities.
  Run r = track(tok.get(), " to=functions.get_weather", true, {}, true);
  CHECK(r.trace().empty());
  CHECK(r.logprobs() == 0);
  // The final channel's header cut before <|message|>.
  r = track(tok.get(), "<|channel|>fin", true, {}, true);
  CHECK(r.trace().empty());
  CHECK(r.logprobs() == 0);
  // After a whole analysis message: that message stays, the cut header goes.
  r = track(tok.get(), "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final", true, {}, true);
  CHECK(r.trace() == "[+analysis/]Hmm.[-]");
  CHECK(r.logprobs() == gptoss::encode(tok.get(), "Hmm.", GPTOSS_ENCODE_ALLOW_SPECIAL).size());
  // Cut right after <|message|>: the message exists, with no text yet.
  r = track(tok.get(), "<|channel|>final<|message|>", true, {}, true);
  CHECK(r.trace() == "[+final/][-cut]");
}

TEST_CASE("raw text: every token's bytes, UTF-8 whole, stop strings", "[server][tracker]") {
  auto tok = real_tokenizer();
  Run r = track(tok.get(), "Once upon a time <|start|> 漢字", false);
  CHECK(r.trace() == "[+/]Once upon a time <|start|> 漢字[-]");
  CHECK(r.logprobs() ==
        gptoss::encode(tok.get(), "Once upon a time <|start|> 漢字", GPTOSS_ENCODE_ALLOW_SPECIAL)
            .size());
  r = track(tok.get(), "a b c d", false, {"c"});
  CHECK(r.trace() == "[+/]a b [-]");
}
