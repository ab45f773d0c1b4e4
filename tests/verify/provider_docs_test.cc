// Tests that the lists of providers written for people follow the provider table
// (config/providers.h): each names every row once and nothing else. The README's "Provider
// defaults" table, its `provider` key's choices and the providers its `tolerance` key names
// (the rows with a signed timestamp), and the man page's list, in debian/manpage/config.roff:
// the config section scripts/manpage.sh appends to hookbox(1) as it is written (the rest of
// the page is the CLI's --help).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "config/providers.h"

namespace hookbox {
namespace {

// A file of the repository (HOOKBOX_TEST_DATA is its tests/data).
std::string ReadRepoFile(const std::string& relative) {
  const std::filesystem::path root =
      std::filesystem::path(HOOKBOX_TEST_DATA).parent_path().parent_path();
  std::ifstream in(root / relative, std::ios::binary);
  INFO(relative);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    lines.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return lines;
}

// The names of `text` between backticks: "`a`, `b`" -> a, b.
std::vector<std::string> Backticked(std::string_view text) {
  std::vector<std::string> names;
  for (size_t open = text.find('`'); open != std::string_view::npos; open = text.find('`')) {
    const size_t close = text.find('`', open + 1);
    if (close == std::string_view::npos) break;
    names.emplace_back(text.substr(open + 1, close - open - 1));
    text.remove_prefix(close + 1);
  }
  return names;
}

// "a, b and c" (or "a, b, c") -> a, b, c.
std::vector<std::string> Listed(std::string_view text) {
  std::vector<std::string> names;
  while (!text.empty()) {
    size_t end = std::min(text.find(','), text.find(" and "));
    const std::string_view item = text.substr(0, end);
    if (!item.empty()) names.emplace_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + (text[end] == ',' ? 1 : 5));
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (text.starts_with("and ")) text.remove_prefix(4);  // "a, b, and c"
  }
  return names;
}

// The cells of a Markdown table row: "| a | b |" -> a, b.
std::vector<std::string_view> Cells(std::string_view row) {
  std::vector<std::string_view> cells;
  if (!row.starts_with("| ")) return cells;
  row.remove_prefix(2);
  for (size_t bar = row.find(" | "); bar != std::string_view::npos; bar = row.find(" | ")) {
    cells.push_back(row.substr(0, bar));
    row.remove_prefix(bar + 3);
  }
  if (row.ends_with(" |")) row.remove_suffix(2);
  cells.push_back(row);
  return cells;
}

// The README's configuration table row of `key` (first cell "`key`").
std::vector<std::string_view> KeyRow(std::string_view readme, std::string_view key) {
  const std::string first = "`" + std::string(key) + "`";
  for (std::string_view line : Lines(readme)) {
    std::vector<std::string_view> cells = Cells(line);
    if (!cells.empty() && cells[0] == first) return cells;
  }
  FAIL("no row for " << key << " in README.md's tables");
  return {};
}

std::vector<std::string> Sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// The rows' names (those for which `keep` holds), sorted.
template <typename Keep>
std::vector<std::string> RowNames(Keep keep) {
  std::vector<std::string> names;
  for (const ProviderSpec& row : Providers()) {
    if (keep(row)) names.emplace_back(row.name);
  }
  return Sorted(names);
}

std::vector<std::string> RowNames() {
  return RowNames([](const ProviderSpec&) { return true; });
}

TEST_CASE("provider docs: README's Provider defaults table has one row per provider",
          "[providers]") {
  const std::string readme = ReadRepoFile("README.md");
  std::vector<std::string> names;
  bool in_section = false;
  bool in_table = false;
  for (std::string_view line : Lines(readme)) {
    if (line.starts_with("### ")) {
      if (in_section) break;
      in_section = line == "### Provider defaults";
      continue;
    }
    if (!in_section) continue;
    if (line.starts_with("|")) {
      in_table = true;
      const std::vector<std::string_view> cells = Cells(line);
      if (cells.empty() || cells[0].starts_with("---") || cells[0] == "provider") continue;
      const std::vector<std::string> first = Backticked(cells[0]);
      INFO(std::string(line));
      REQUIRE(first.size() == 1);
      names.push_back(first[0]);
    } else if (in_table) {
      break;  // the table's end
    }
  }
  REQUIRE(in_table);
  CHECK(Sorted(names) == RowNames());
}

TEST_CASE("provider docs: README's provider key lists every provider", "[providers]") {
  const std::string readme = ReadRepoFile("README.md");
  const std::vector<std::string_view> cells = KeyRow(readme, "provider");
  REQUIRE(cells.size() >= 2);
  CHECK(Sorted(Backticked(cells[1])) == RowNames());
}

TEST_CASE("provider docs: README's tolerance key names the providers that sign a timestamp",
          "[providers]") {
  const std::string readme = ReadRepoFile("README.md");
  const std::vector<std::string_view> cells = KeyRow(readme, "tolerance");
  REQUIRE(cells.size() >= 4);
  // "timestamp window of a, b and c signatures; ..."
  const std::string_view meaning = cells[3];
  constexpr std::string_view kBefore = "timestamp window of ";
  const size_t start = meaning.find(kBefore);
  REQUIRE(start != std::string_view::npos);
  const size_t end = meaning.find(" signatures", start);
  REQUIRE(end != std::string_view::npos);
  const std::string_view list =
      meaning.substr(start + kBefore.size(), end - start - kBefore.size());
  CHECK(Sorted(Listed(list)) ==
        RowNames([](const ProviderSpec& row) { return !row.timestamp.empty(); }));
}

TEST_CASE("provider docs: the man page's config section lists every provider", "[providers]") {
  const std::string roff = ReadRepoFile("debian/manpage/config.roff");
  const std::vector<std::string_view> lines = Lines(roff);
  // ".B provider" then "(a, b, ..., z),": the endpoint keys' paragraph.
  const auto key = std::find(lines.begin(), lines.end(), ".B provider");
  REQUIRE(key != lines.end());
  REQUIRE(key + 1 != lines.end());
  std::string_view list = *(key + 1);
  INFO(std::string(list));
  REQUIRE(list.starts_with("("));
  const size_t close = list.find(')');
  REQUIRE(close != std::string_view::npos);
  list = list.substr(1, close - 1);
  CHECK(Sorted(Listed(list)) == RowNames());
}

}  // namespace
}  // namespace hookbox
