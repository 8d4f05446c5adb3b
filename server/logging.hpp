#pragma once
// The server's log: spdlog to stderr or --log-file, as text lines or one JSON object per line
// (--log-format json), with libgptoss's own messages routed into it.
#include "server_options.hpp"

namespace gptoss_server {

// Throws UsageError when the log file cannot be opened.
void setup_logging(const ServerOptions& options);

// SIGHUP: --log-file is closed and opened again by its name (after logrotate renamed it); on
// failure the old file stays in use and the error is logged. Nothing without --log-file.
void reopen_log_file();

}  // namespace gptoss_server
