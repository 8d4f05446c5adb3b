#pragma once
// Following generations from a request thread: events as they come, the client watched so
// that an abandoned generation is cancelled within a step; Server-Sent Events framing.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "engine/job.hpp"
#include "http/client_connection.hpp"

namespace gptoss_server {

// Calls on_events(i, events) as job i produces events and on_finish(i, finish) when it ends,
// until every job has ended. A callback returning false (a write failed), or the client
// closing the connection, cancels every job and returns false.
bool follow_jobs(const std::vector<std::shared_ptr<Job>>& jobs, const ClientConnection& client,
                 const std::function<bool(size_t, std::vector<OutputEvent>&)>& on_events,
                 const std::function<bool(size_t, const Finish&)>& on_finish);

// "event: TYPE\ndata: JSON\n\n" (named, the Responses API) or "data: JSON\n\n" (Chat and
// Completions). False when the client is gone.
bool write_sse(httplib::DataSink& sink, const nlohmann::json& data, bool named);
bool write_sse_done(httplib::DataSink& sink);  // "data: [DONE]"

}  // namespace gptoss_server
