// consumer.c in C++ over the installed include/gptoss.hpp: a user's C++ program built out of
// tree (CMakeLists.txt here, -std=c++20 -pedantic) by scripts/test-install.sh. It prints the
// same line as consumer.c.
//   consumer-cpp MODEL_DIR
#include <gptoss/backend.h>
#include <gptoss.hpp>

#include <cstdio>
#include <string_view>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer-cpp MODEL_DIR\n");
    return 2;
  }
  if (std::string_view(gptoss_get_version()) != GPTOSS_VERSION_STRING) {
    std::fprintf(stderr, "consumer-cpp: built against %s, running %s\n", GPTOSS_VERSION_STRING,
                 gptoss_get_version());
    return 1;
  }
  gptoss_set_log_callback([](gptoss_log_level, const char* message,
                             void*) { std::fprintf(stderr, "libgptoss: %s\n", message); },
                          gptoss_log_level_info, nullptr);
  try {
    const gptoss::model model = gptoss::model::load(argv[1]);
    const gptoss::tokenizer tokenizer = model.get_tokenizer();
    gptoss_context_options context_options;
    gptoss::check(gptoss_context_options_init(&context_options), "gptoss_context_options_init");
    context_options.context_length = 64;
    const gptoss::context context = gptoss::context::create(model.get(), &context_options);
    context.append(tokenizer.encode("Hello"));
    gptoss_sampler_options sampler_options;
    gptoss::check(gptoss_sampler_options_init(&sampler_options), "gptoss_sampler_options_init");
    sampler_options.temperature = 0.0f;
    const gptoss::sampler sampler = gptoss::sampler::create(&sampler_options);
    const uint32_t token = context.sample(sampler.get());
    std::printf("libgptoss %s (ABI %d, plugin ABI %d), backend %s: token %u\n",
                gptoss_get_version(), GPTOSS_ABI_VERSION, GPTOSS_BACKEND_ABI_MAJOR,
                model.info().backend, unsigned(token));
    return 0;
  } catch (const gptoss::error& e) {
    std::fprintf(stderr, "consumer-cpp: %s\n", e.what());
    return 1;
  }
}
