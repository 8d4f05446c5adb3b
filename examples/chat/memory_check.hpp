#pragma once
// Refusing a model the machine cannot hold, with the numbers, before its weights are touched:
// a model bigger than memory does not fail cleanly later, it pages its weights in from disk
// on every token or gets the process killed.
#include <cstdint>
#include <string>

#include <gptoss.hpp>
#include "cli_options.hpp"

namespace gptoss_cli {

// What this process can use: /proc/meminfo's MemAvailable, lowered to the memory cgroup's
// limit minus what the cgroup holds beyond its reclaimable file cache (cgroup v2 memory.max,
// v1 memory.limit_in_bytes). GPTOSS_MEMORY_AVAILABLE=BYTES replaces the measurement (tests,
// or a machine whose limits these files do not show).
struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // "MemAvailable", "cgroup limit 8.0 GiB", "GPTOSS_MEMORY_AVAILABLE"
};
AvailableMemory available_memory();

// The weights' bytes as stored: a .gguf file's size, or the sum of a Hugging Face
// directory's top-level *.safetensors files (what the loader maps).
uint64_t weight_file_bytes(const std::string& model_path);

// Before loading: throws std::runtime_error when the weight files alone exceed `available`.
void check_weights_fit(const std::string& model_path, const AvailableMemory& available);

// After the headers are read, before any KV cache exists: throws std::runtime_error when the
// weights plus the KV cache the CLI reserves (--max-kv tokens, else --context tokens, 0 = the
// model's maximum, per context: --batch of them in getp) exceed `available`.
void check_model_fits(gptoss_model_t model, const std::string& model_path, const Options& options,
                      const AvailableMemory& available);

}  // namespace gptoss_cli
