// The tokenizer a checkpoint brings: from tokenizer.json beside an HF directory (or named by
// the caller), or from a GGUF's metadata. Both must tokenize alike.
#include "libgptoss/model/weights.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

namespace fs = std::filesystem;

// False (with a warning) where the data or the tokenizer itself are not available here.
bool tokenizer_available() {
  if (!fs::is_regular_file(gptoss::test::tokenizer_json())) {
    WARN("no tokenizer.json at " << gptoss::test::tokenizer_json());
    return false;
  }
  try {
    gptoss::Tokenizer::from_json_file(gptoss::test::tokenizer_json());
  } catch (const gptoss::Error& e) {
    if (e.status() != gptoss_status_unsupported_argument) throw;
    WARN("tokenizer not built into this library yet: " << e.what());
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("checkpoint tokenizers: GGUF metadata and tokenizer.json agree", "[model]") {
  if (!tokenizer_available()) return;
  gptoss::test::TempDir dir;  // the shared HF directory has no tokenizer.json: copy one beside
  const std::string hf = gptoss::test::logits_dir() + "/model-hf";
  for (const char* f : {"config.json", "model.safetensors"})
    fs::create_symlink(hf + "/" + f, dir.path() / f);
  fs::copy_file(gptoss::test::tokenizer_json(), dir.path() / "tokenizer.json");

  auto from_dir = gptoss::open_checkpoint(dir.path().string(), {})->tokenizer();
  auto from_gguf = gptoss::open_checkpoint(gptoss::test::logits_dir() + "/model.gguf", {})->tokenizer();
  gptoss::OpenOptions named;
  named.tokenizer_path = gptoss::test::tokenizer_json();
  auto from_option = gptoss::open_checkpoint(hf, named)->tokenizer();
  REQUIRE(from_dir);
  REQUIRE(from_gguf);
  REQUIRE(from_option);
  CHECK(from_gguf->num_tokens() == from_dir->num_tokens());
  const std::string text =
      "<|start|>user<|message|>Héllo, wörld! 12345 tokens    and\n\ttabs 🤖<|end|>";
  const auto ids = from_dir->encode_with_specials(text);
  CHECK(ids.size() > 10);
  CHECK(from_gguf->encode_with_specials(text) == ids);
  CHECK(from_option->encode_with_specials(text) == ids);
  CHECK(from_gguf->decode(ids) == text);

  gptoss::OpenOptions no_tok;
  no_tok.load_tokenizer = false;
  CHECK(gptoss::open_checkpoint(hf, no_tok)->tokenizer() == nullptr);
}
