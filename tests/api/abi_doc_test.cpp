// docs/abi.md's table of struct sizes and the `since` markers of gptoss.h, checked against the
// list the library uses (GPTOSS_VERSIONED_STRUCTS in libgptoss/api/struct_versions.hpp), so
// that neither goes stale: a struct appended to, a new versioned struct, a row or a marker
// edited by hand all fail here with the table as it should read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "libgptoss/api/struct_versions.hpp"
#include "support/paths.hpp"

// The sizes are those of 64-bit systems, the only ones the library is built for.
#if UINTPTR_MAX > 0xFFFFFFFFu

namespace {

struct Version {
  size_t size;        // sizeof the struct at this version
  std::string field;  // its last field
};

struct Row {
  std::string name;
  std::vector<Version> versions;
};

// "GPTOSS_UPTO(a), GPTOSS_UPTO(b)" (the row as written, stringified) -> {"a", "b"}.
std::vector<std::string> upto_fields(const std::string& text) {
  std::vector<std::string> out;
  const std::regex upto(R"(GPTOSS_UPTO\(\s*(\w+)\s*\))");
  for (std::sregex_iterator it(text.begin(), text.end(), upto), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

template <typename T>
Row row_of(const char* name, const char* fields_text) {
  using gptoss::api::StructVersions;
  const std::vector<std::string> fields = upto_fields(fields_text);
  REQUIRE(fields.size() == std::size(StructVersions<T>::ends));
  Row row{name, {}};
  for (size_t i = 0; i < fields.size(); ++i)
    row.versions.push_back(
        {gptoss::api::round_up(StructVersions<T>::ends[i], alignof(T)), fields[i]});
  CHECK(row.versions.back().size == sizeof(T));
  return row;
}

std::vector<Row> library_rows() {
  std::vector<Row> rows;
#define GPTOSS_ROW(T, ...) rows.push_back(row_of<T>(#T, #__VA_ARGS__));
  GPTOSS_VERSIONED_STRUCTS(GPTOSS_ROW)
#undef GPTOSS_ROW
  return rows;
}

// A row of docs/abi.md's table: | `gptoss_x` | 40 (`a`), 48 (`b`) |
std::string table_line(const Row& row) {
  std::string line = "| `" + row.name + "` | ";
  for (size_t i = 0; i < row.versions.size(); ++i)
    line += (i ? ", " : "") + std::to_string(row.versions[i].size) + " (`" + row.versions[i].field +
            "`)";
  return line + " |";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A struct of gptoss.h that begins with struct_size: its fields in order, the marker written
// before each (empty when none): "0.2 (48 bytes...)" for /* since 0.2 (48 bytes...) */, and
// the struct's own (`struct gptoss_x { /* since 0.2 */`; "0.1" when it has none).
struct HeaderStruct {
  std::string name;
  std::vector<std::string> fields, markers;
  std::string since = "0.1";
};

// "0.12" -> {0, 12}
std::pair<int, int> version_of(const std::string& v) {
  const size_t dot = v.find('.');
  return {std::stoi(v.substr(0, dot)), std::stoi(v.substr(dot + 1))};
}

std::vector<HeaderStruct> header_structs(const std::string& header) {
  std::vector<HeaderStruct> out;
  const std::regex open(R"(\nstruct (gptoss_\w+) \{[^\n]*\n\s*size_t struct_size;)");
  for (std::sregex_iterator it(header.begin(), header.end(), open), end; it != end; ++it) {
    HeaderStruct s{(*it)[1], {}, {}};
    const size_t body = size_t(it->position(0));
    const std::string text = header.substr(body, header.find("\n};", body) - body);
    // Comments and declarations in order: a marker comment applies to the next field.
    const std::regex token(R"((/\*[\s\S]*?\*/)|([\w\s\*]*?(\w+)\s*;))");
    std::string pending;
    const size_t start = text.find('{') + 1;
    for (std::sregex_iterator t(text.begin() + std::ptrdiff_t(start), text.end(), token), e; t != e;
         ++t) {
      if ((*t)[1].matched) {
        std::smatch m;
        const std::string comment = (*t)[1];
        if (std::regex_match(comment, m,
                             std::regex(R"(/\* since (\d+\.\d+ \(\d+ bytes[^)]*\)) \*/)")))
          pending = m[1];
        else if (s.fields.empty() &&
                 std::regex_match(comment, m, std::regex(R"(/\* since (\d+\.\d+) \*/)")))
          s.since = m[1];
        else CHECK_FALSE(comment.find("since") == 2);  // a marker not in the form above
      } else {
        s.fields.push_back((*t)[3]);
        s.markers.push_back(pending);
        pending.clear();
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("abi docs: docs/abi.md's table of struct sizes is the library's list",
          "[api][abi][fixed-device]") {
  const std::vector<Row> rows = library_rows();
  std::string expected, documented;
  for (const Row& r : rows) expected += table_line(r) + "\n";
  std::istringstream doc(read_file(gptoss::test::source_dir() + "/docs/abi.md"));
  for (std::string line; std::getline(doc, line);)
    if (line.rfind("| `gptoss_", 0) == 0) documented += line + "\n";
  INFO("docs/abi.md's rows should read (GPTOSS_VERSIONED_STRUCTS, struct_versions.hpp):\n"
       << expected);
  CHECK(documented == expected);
}

TEST_CASE(
    "abi docs: each struct_size struct of gptoss.h has a row and since-markers at its versions",
    "[api][abi][fixed-device]") {
  const std::vector<Row> rows = library_rows();
  const std::vector<HeaderStruct> structs =
      header_structs(read_file(gptoss::test::source_dir() + "/include/gptoss.h"));
  std::vector<std::string> row_names, header_names;
  for (const Row& r : rows) row_names.push_back(r.name);
  for (const HeaderStruct& s : structs) header_names.push_back(s.name);
  std::sort(row_names.begin(), row_names.end());
  std::sort(header_names.begin(), header_names.end());
  REQUIRE(header_names == row_names);

  for (const Row& row : rows) {
    const HeaderStruct& s = *std::find_if(
        structs.begin(), structs.end(), [&](const HeaderStruct& h) { return h.name == row.name; });
    // The marker each field should carry: the first field of every version after the first.
    std::vector<std::string> want(s.fields.size());
    size_t next = 0;  // the first field of the version being walked
    for (size_t v = 0; v < row.versions.size(); ++v) {
      const auto last = std::find(s.fields.begin(), s.fields.end(), row.versions[v].field);
      INFO(row.name << ": the row's field " << row.versions[v].field);
      REQUIRE(last != s.fields.end());
      const size_t end = size_t(last - s.fields.begin()) + 1;
      REQUIRE(end > next);  // a version adds at least one field, in order
      if (v > 0) want[next] = std::to_string(row.versions[v].size) + " bytes";
      next = end;
    }
    CHECK(next == s.fields.size());
    std::string previous = s.since;
    for (size_t f = 0; f < s.fields.size(); ++f) {
      INFO(row.name << "." << s.fields[f] << ": marker \"" << s.markers[f] << "\"");
      if (want[f].empty()) {
        CHECK(s.markers[f].empty());
      } else {
        // "0.x (N bytes...)": N is the version's size; versions only grow down the struct.
        REQUIRE(!s.markers[f].empty());
        const std::string version = s.markers[f].substr(0, s.markers[f].find(' '));
        CHECK(s.markers[f].substr(version.size() + 2, want[f].size()) == want[f]);
        CHECK(version_of(version) >= version_of(previous));
        previous = version;
      }
    }
  }
}

#endif
