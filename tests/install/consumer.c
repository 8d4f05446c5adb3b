/*
 * A program of a libgptoss user, built out of tree against an installed libgptoss only — by
 * CMake (find_package, CMakeLists.txt here) and by pkg-config and cc — by
 * scripts/test-install.sh. It loads a model, generates one token greedily and prints it with
 * where the library and its backend plugin were loaded from (the plugin path comes from the
 * library's own log).
 *   consumer MODEL_DIR
 */
#include <gptoss.h>
#include <gptoss/backend.h> /* the plugin header compiles from an install too */
#include <stdio.h>
#include <string.h>

static void print_log(enum gptoss_log_level level, const char* message, void* user_data) {
  (void)level;
  (void)user_data;
  fprintf(stderr, "libgptoss: %s\n", message);
}

static int fail(const char* what, enum gptoss_status status) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, gptoss_status_to_string(status),
          gptoss_get_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  gptoss_model_t model = NULL;
  gptoss_context_t context = NULL;
  gptoss_sampler_t sampler = NULL;
  struct gptoss_sampler_options options;
  struct gptoss_model_info info;
  enum gptoss_status st;
  uint32_t token = 0;
  int rc = 1;
  if (argc != 2) {
    fprintf(stderr, "usage: consumer MODEL_DIR\n");
    return 2;
  }
  if (strcmp(gptoss_get_version(), GPTOSS_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: built against %s, running %s\n", GPTOSS_VERSION_STRING,
            gptoss_get_version());
    return 1;
  }
  gptoss_set_log_callback(print_log, gptoss_log_level_info, NULL);
  if ((st = gptoss_model_create_from_file(argv[1], &model)) != gptoss_status_success)
    return fail("gptoss_model_create_from_file", st);
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  gptoss_sampler_options_init(&options);
  options.temperature = 0.0f;
  if ((st = gptoss_model_get_info(model, &info)) != gptoss_status_success)
    fail("gptoss_model_get_info", st);
  else if ((st = gptoss_context_create(model, 64, &context)) != gptoss_status_success)
    fail("gptoss_context_create", st);
  else if ((st = gptoss_context_append_chars(context, "Hello", 5, NULL)) != gptoss_status_success)
    fail("gptoss_context_append_chars", st);
  else if ((st = gptoss_sampler_create(&options, &sampler)) != gptoss_status_success)
    fail("gptoss_sampler_create", st);
  else if ((st = gptoss_context_sample(context, sampler, &token)) != gptoss_status_success)
    fail("gptoss_context_sample", st);
  else {
    printf("libgptoss %s (ABI %d, plugin ABI %d), backend %s: token %u\n", gptoss_get_version(),
           GPTOSS_ABI_VERSION, GPTOSS_BACKEND_ABI_MAJOR, info.backend, (unsigned)token);
    rc = 0;
  }
  gptoss_sampler_release(sampler);
  gptoss_context_release(context);
  gptoss_model_release(model);
  return rc;
}
