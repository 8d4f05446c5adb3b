#pragma once
// Finding (or making) the model and loading it with a progress line on stderr.
#include <string>

#include <gptoss.hpp>
#include "cli_options.hpp"

namespace gptoss_cli {

// $GPTOSS_HOME/models/tiny, else ~/.cache/gptoss/models/tiny.
std::string default_model_dir();

// The tiny synthetic model's directory, generated with gptoss-make-model (found beside this
// executable) on first use. Throws UsageError when the generator or tokenizer.json is missing.
std::string ensure_default_model(bool quiet);

// Loads options.model_path (or the default model) with options' backend, threads, layers and
// tokenizer. While it loads, an elapsed-time spinner runs on stderr if stderr is a terminal.
gptoss::model load_model(const Options& options);

}  // namespace gptoss_cli
