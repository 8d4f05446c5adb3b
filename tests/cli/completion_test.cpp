// The CLI's streaming display (examples/chat/completion.cpp) on hand-written Harmony turns:
// what `gptoss generate` prints as the answer. The constrained CLI offers no tools, so no
// random-weight model run writes a commentary preamble; this feeds one in directly.
//
// usage: gptoss-cli-completion-test TOKENIZER_JSON
#include <cstdio>
#include <string>

#include "completion.hpp"

namespace {

using namespace gptoss_cli;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  ++failures;
}

struct Shown {
  std::string out;     // what went to the display's stream
  std::string answer;  // Completion::answer()
};

// Streams `turn` (Harmony text after "<|start|>assistant") through a Completion.
Shown show(gptoss_tokenizer_t tokenizer, const std::string& turn, bool show_reasoning) {
  std::FILE* file = std::tmpfile();
  if (file == nullptr) throw std::runtime_error("tmpfile failed");
  Shown shown;
  {
    Completion completion(tokenizer, /*harmony=*/true, Display{file, show_reasoning, /*color=*/false});
    for (uint32_t token : gptoss::encode(tokenizer, turn, GPTOSS_ENCODE_ALLOW_SPECIAL))
      completion.on_token(token);
    completion.finish();
    shown.answer = completion.answer();
  }
  std::rewind(file);
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) shown.out.append(buffer, n);
  std::fclose(file);
  return shown;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON\n", argv[0]);
    return 2;
  }
  try {
    gptoss_tokenizer_t raw = nullptr;
    gptoss::check(gptoss_tokenizer_create_from_file(argv[1], &raw),
                  "gptoss_tokenizer_create_from_file");
    gptoss::tokenizer tokenizer(raw);

    // A preamble, then the answer: only the answer is printed unless reasoning is shown.
    const std::string preamble_then_answer =
        "<|channel|>commentary<|message|>Let me think about it.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>{\"n\": 4}<|return|>";
    Shown hidden = show(tokenizer.get(), preamble_then_answer, false);
    expect(hidden.out == "{\"n\": 4}\n", "a preamble printed with the answer: '" + hidden.out + "'");
    expect(hidden.answer == "{\"n\": 4}", "answer() holds more than the final channel: '" + hidden.answer + "'");
    Shown shown = show(tokenizer.get(), preamble_then_answer, true);
    expect(shown.out == "[preamble] Let me think about it.\n{\"n\": 4}\n",
           "a shown preamble is not labelled apart from the answer: '" + shown.out + "'");

    // Analysis, a preamble and a tool call: the call shows, the rest is reasoning.
    const std::string reasoning_then_call =
        "<|channel|>analysis<|message|>Need a lookup.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking the record.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{\"id\":1}<|call|>";
    hidden = show(tokenizer.get(), reasoning_then_call, false);
    expect(!contains(hidden.out, "Checking") && !contains(hidden.out, "Need a lookup"),
           "reasoning printed without --show-reasoning: '" + hidden.out + "'");
    expect(contains(hidden.out, "[tool call -> functions.lookup") && contains(hidden.out, "{\"id\":1}"),
           "the tool call is not shown: '" + hidden.out + "'");
    expect(hidden.answer.empty(), "a turn without final channel has an answer: '" + hidden.answer + "'");
    shown = show(tokenizer.get(), reasoning_then_call, true);
    expect(contains(shown.out, "[reasoning] Need a lookup.\n[preamble] Checking the record.\n"),
           "reasoning and preamble not shown as such: '" + shown.out + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
  if (failures == 0) std::printf("completion display: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
