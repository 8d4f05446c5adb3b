// gptoss-conformance backend-ops [-b BACKEND] [-o OP[,OP...]] [--shapes tails,real,big|all]
//                                [--precision exact|fast] [--perf N] [--list]
// Runs the cases of backend_ops_*.cpp on device 0 of every loaded backend (or -b's), against
// the CPU plugin's scalar reference device; prints one line per case and a final
// "N passed, M failed" line; exit 0 only if nothing failed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "tools/conformance/backend_ops.hpp"
#include "tools/conformance/conformance.hpp"

namespace gptoss::conformance {
namespace {

using namespace ops;

struct Options {
  std::string backend;            // empty: every loaded backend
  std::set<std::string> ops;      // empty: every op
  std::set<Shapes> shapes = {Shapes::tails, Shapes::real};
  gptoss_precision precision = gptoss_precision_exact;
  int perf = 0;
  bool list = false;
};

int usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "gptoss-conformance backend-ops: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: gptoss-conformance backend-ops [-b BACKEND] [-o OP[,OP...]]\n"
               "         [--shapes tails,real,big|all] (default tails,real) [--precision exact|fast]\n"
               "         [--perf N] (median of N timed calls per case) [--list]\n");
  return 2;
}

std::set<std::string> split(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.insert(item);
  return out;
}

// Parses argv after "backend-ops"; nullopt after printing why.
std::optional<Options> parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--list") {
      o.list = true;
      continue;
    }
    const auto v = value();
    if (!v) {
      usage("option " + a + " needs a value");
      return std::nullopt;
    }
    if (a == "-b") {
      o.backend = *v;
    } else if (a == "-o") {
      o.ops = split(*v);
    } else if (a == "--shapes") {
      o.shapes.clear();
      for (const std::string& s : split(*v)) {
        if (s == "tails") o.shapes.insert(Shapes::tails);
        else if (s == "real") o.shapes.insert(Shapes::real);
        else if (s == "big") o.shapes.insert(Shapes::big);
        else if (s == "all") o.shapes = {Shapes::tails, Shapes::real, Shapes::big};
        else {
          usage("--shapes takes tails, real, big or all, not '" + s + "'");
          return std::nullopt;
        }
      }
    } else if (a == "--precision" && (*v == "exact" || *v == "fast")) {
      o.precision = *v == "exact" ? gptoss_precision_exact : gptoss_precision_fast;
    } else if (a == "--perf") {
      char* end = nullptr;
      const long n = std::strtol(v->c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 100000) {
        usage("--perf takes a count of calls (1..100000), not '" + *v + "'");
        return std::nullopt;
      }
      o.perf = int(n);
    } else {
      usage(a == "--precision" ? "--precision takes exact or fast, not '" + *v + "'" : "unknown option " + a);
      return std::nullopt;
    }
  }
  return o;
}

// Whether the backend has the slot a case exercises (optional slots may be absent).
bool has_op(const gptoss_backend_api* api, const std::string& op) {
  if (op == "linear_qkv") return GPTOSS_HAS_SLOT(api, linear_qkv);
  if (op == "add_rmsnorm") return GPTOSS_HAS_SLOT(api, add_rmsnorm);
  if (op == "rope_kv_write") return GPTOSS_HAS_SLOT(api, rope_kv_write);
  if (op == "sample") return GPTOSS_HAS_SLOT(api, sample);
  if (op == "buffer_copy_peer") return GPTOSS_HAS_SLOT(api, buffer_copy_peer);
  return true;
}

// The reference: a CPU device opened with GPTOSS_CPU_ISA=scalar (read by device_open),
// in exact precision.
std::unique_ptr<Dev> open_reference() {
  auto cpu = BackendRegistry::instance().select("cpu");
  const char* was = std::getenv("GPTOSS_CPU_ISA");
  const std::string saved = was ? was : "";
  ::setenv("GPTOSS_CPU_ISA", "scalar", 1);
  std::unique_ptr<Dev> ref;
  try {
    ref = std::make_unique<Dev>(cpu, 0, gptoss_precision_exact);
  } catch (...) {
    was ? ::setenv("GPTOSS_CPU_ISA", saved.c_str(), 1) : ::unsetenv("GPTOSS_CPU_ISA");
    throw;
  }
  was ? ::setenv("GPTOSS_CPU_ISA", saved.c_str(), 1) : ::unsetenv("GPTOSS_CPU_ISA");
  return ref;
}

}  // namespace

namespace ops {
std::vector<Case> all_cases() {
  std::vector<Case> c;
  dense_cases(c);
  attention_cases(c);
  moe_cases(c);
  misc_cases(c);
  return c;
}
}  // namespace ops

int run_backend_ops(const std::vector<std::string>& args) {
  const auto parsed = parse(args);
  if (!parsed) return 2;
  const Options& o = *parsed;
  const std::vector<Case> cases = all_cases();
  std::set<std::string> known;
  for (const Case& c : cases) known.insert(c.op);
  for (const std::string& op : o.ops)
    if (!known.count(op)) return usage("unknown op '" + op + "'");
  if (o.list) {
    for (const Case& c : cases)
      std::printf("%-14s %-5s %s\n", c.op.c_str(),
                  c.shapes == Shapes::tails ? "tails" : c.shapes == Shapes::real ? "real" : "big", c.shape.c_str());
    return 0;
  }
  auto plugins = BackendRegistry::instance().plugins();
  if (!o.backend.empty()) {
    plugins.clear();
    plugins.push_back(BackendRegistry::instance().select(o.backend));
  }
  const std::unique_ptr<Dev> ref = open_reference();
  std::printf("reference: %s, exact\n", ref->label().c_str());
  size_t passed = 0, failed = 0, skipped = 0;
  for (const auto& plugin : plugins) {
    if (plugin->api->device_count() < 1) continue;
    Dev test(plugin, 0, o.precision);
    std::unique_ptr<Dev> test2;
    if (plugin->api->device_count() > 1) test2 = std::make_unique<Dev>(plugin, 1, o.precision);
    std::printf("testing: %s, %s\n", test.label().c_str(),
                o.precision == gptoss_precision_exact ? "exact" : "fast");
    Pair pair{*ref, test, test2.get(), o.precision, o.perf};
    for (const Case& c : cases) {
      if ((!o.ops.empty() && !o.ops.count(c.op)) || !o.shapes.count(c.shapes)) continue;
      Result r;
      if (!has_op(plugin->api, c.op)) {
        r.skipped = true;
        r.note = "optional slot absent";
      } else {
        try {
          r = c.run(pair);
        } catch (const std::exception& e) {
          r.ok = false;
          r.note = e.what();
        }
      }
      const char* verdict = r.skipped ? "SKIP" : r.ok ? "PASS" : "FAIL";
      (r.skipped ? skipped : r.ok ? passed : failed)++;
      std::printf("%s %-6s %-13s %-62s", verdict, plugin->name.c_str(), c.op.c_str(), c.shape.c_str());
      if (!r.skipped) std::printf(" err %.2g (tol %.2g)", r.error, r.tol);
      if (r.us > 0) std::printf(" %10.1f us", r.us);
      if (!r.note.empty()) std::printf("  %s", r.note.c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
  return failed == 0 && passed > 0 ? 0 : 1;
}

}  // namespace gptoss::conformance
