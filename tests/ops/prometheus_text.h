// A strict reader of the Prometheus text exposition format (0.0.4) for tests: every line must
// be a comment, a HELP or TYPE line, or a well-formed sample; names, label names, escapes
// and values are checked; each family's TYPE comes before its samples and at most once;
// no sample appears twice; histograms have an `le` on every bucket, cumulative counts
// and a +Inf bucket equal to their _count. Samples are kept by a canonical key,
// `name{a="x",b="y"}` with labels sorted, so tests can look values up.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace hookbox::testing {

struct Exposition {
  std::map<std::string, double> samples;     // canonical key -> value
  std::map<std::string, std::string> types;  // family name -> type
  std::vector<std::string> errors;           // "line N: what"; empty when it parsed

  std::optional<double> Get(const std::string& key) const {
    auto it = samples.find(key);
    if (it == samples.end()) return std::nullopt;
    return it->second;
  }
  // The sum of every sample of `name` whose labels include all of `match`.
  double Sum(const std::string& name,
             const std::vector<std::pair<std::string, std::string>>& match = {}) const {
    double total = 0;
    for (const auto& [key, value] : samples) {
      if (key != name && key.rfind(name + "{", 0) != 0) continue;
      bool all = true;
      for (const auto& [k, v] : match) {
        all = all && key.find(k + "=\"" + v + "\"") != std::string::npos;
      }
      if (all) total += value;
    }
    return total;
  }
};

namespace prometheus_internal {

inline bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
inline bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || (c >= '0' && c <= '9');
}

// Reads a name at `at`; empty when there is none.
inline std::string Name(const std::string& s, size_t& at, bool colon) {
  size_t start = at;
  if (at < s.size() && IsNameStart(s[at], colon)) {
    ++at;
    while (at < s.size() && IsNameChar(s[at], colon)) ++at;
  }
  return s.substr(start, at - start);
}

inline std::optional<double> Value(const std::string& text) {
  if (text == "+Inf" || text == "Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  if (text == "NaN") return std::nan("");
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  if (text.find_first_of("xXpP") != std::string::npos) return std::nullopt;  // no hex floats
  return v;
}

// The family a sample name belongs to, given the declared types.
inline std::string FamilyOf(const std::string& name,
                            const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && (it->second == "histogram" || it->second == "summary")) {
        return base;
      }
    }
  }
  return name;
}

}  // namespace prometheus_internal

inline Exposition ParsePrometheusText(const std::string& text) {
  using namespace prometheus_internal;
  Exposition out;
  std::set<std::string> seen_samples, families_with_samples, helped;
  // Histograms: family + labels without le -> (le, cumulative count) in order, and _count.
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;
  std::map<std::string, double> counts;
  std::istringstream lines(text);
  int n = 0;
  auto error = [&](const std::string& what) {
    out.errors.push_back("line " + std::to_string(n) + ": " + what);
  };
  if (!text.empty() && text.back() != '\n') {
    out.errors.emplace_back("the exposition does not end with a newline");
  }
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, keyword, name;
      words >> hash >> keyword >> name;
      if (hash != "#" || (keyword != "HELP" && keyword != "TYPE")) continue;  // a comment
      size_t at = 0;
      if (Name(name, at, true) != name || name.empty()) error("bad metric name in " + keyword);
      if (keyword == "HELP") {
        if (!helped.insert(name).second) error("second HELP for " + name);
        std::string help = line.substr(std::min(line.size(), 7 + name.size() + 1));
        for (size_t i = 0; i < help.size(); ++i) {
          if (help[i] == '\\' &&
              (i + 1 >= help.size() || (help[i + 1] != '\\' && help[i + 1] != 'n'))) {
            error("bad escape in HELP of " + name);
          }
          if (help[i] == '\\') ++i;
        }
        continue;
      }
      std::string type, rest;
      words >> type;
      if (words >> rest) error("trailing text after TYPE");
      if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
          type != "untyped") {
        error("unknown type " + type);
      }
      if (out.types.count(name)) error("second TYPE for " + name);
      if (families_with_samples.count(name)) error("TYPE after samples of " + name);
      out.types[name] = type;
      continue;
    }
    // A sample: name, optional {labels}, value, optional timestamp.
    size_t at = 0;
    std::string name = Name(line, at, true);
    if (name.empty()) {
      error("not a sample: " + line);
      continue;
    }
    std::vector<std::pair<std::string, std::string>> labels;
    bool ok = true;
    if (at < line.size() && line[at] == '{') {
      ++at;
      while (ok && at < line.size() && line[at] != '}') {
        std::string label = Name(line, at, false);
        if (label.empty() || at >= line.size() || line[at] != '=' || at + 1 >= line.size() ||
            line[at + 1] != '"') {
          ok = false;
          break;
        }
        at += 2;
        std::string value;
        while (at < line.size() && line[at] != '"') {
          if (line[at] == '\\') {
            if (at + 1 >= line.size()) {
              ok = false;
              break;
            }
            char e = line[at + 1];
            if (e == '\\')
              value += '\\';
            else if (e == '"')
              value += '"';
            else if (e == 'n')
              value += '\n';
            else {
              ok = false;
              break;
            }
            at += 2;
          } else {
            if (line[at] == '\n') ok = false;
            value += line[at++];
          }
        }
        if (!ok || at >= line.size()) {
          ok = false;
          break;
        }
        ++at;  // closing quote
        for (const auto& [k, v] : labels) {
          if (k == label) ok = false;
        }
        labels.emplace_back(label, value);
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (!ok || at >= line.size() || line[at] != '}') {
        error("bad label set: " + line);
        continue;
      }
      ++at;
    }
    if (at >= line.size() || line[at] != ' ') {
      error("no space before the value: " + line);
      continue;
    }
    std::istringstream rest(line.substr(at + 1));
    std::string value_text, timestamp, extra;
    rest >> value_text >> timestamp >> extra;
    std::optional<double> value = Value(value_text);
    if (!value) {
      error("bad value: " + line);
      continue;
    }
    if (!timestamp.empty() && timestamp.find_first_not_of("-0123456789") != std::string::npos) {
      error("bad timestamp: " + line);
    }
    if (!extra.empty()) error("trailing text: " + line);
    const std::string family = FamilyOf(name, out.types);
    families_with_samples.insert(family);
    std::sort(labels.begin(), labels.end());
    std::string key = name, without_le;
    for (const auto& [k, v] : labels) {
      std::string part = k + "=\"" + v + "\"";
      key += (key.size() == name.size() ? "{" : ",") + part;
      if (k != "le") without_le += part + ",";
    }
    if (!labels.empty()) key += "}";
    if (!seen_samples.insert(key).second) error("sample twice: " + key);
    out.samples[key] = *value;
    auto type = out.types.find(family);
    if (type != out.types.end() && type->second == "histogram") {
      const std::string series = family + "|" + without_le;
      if (name == family + "_bucket") {
        auto le = std::find_if(labels.begin(), labels.end(),
                               [](const auto& l) { return l.first == "le"; });
        std::optional<double> bound = le == labels.end() ? std::nullopt : Value(le->second);
        if (!bound)
          error("histogram bucket without a valid le: " + line);
        else
          buckets[series].emplace_back(*bound, *value);
      } else if (name == family + "_count") {
        counts[series] = *value;
      } else if (name != family + "_sum") {
        error("unexpected sample in histogram " + family + ": " + name);
      }
    }
  }
  for (const auto& [series, list] : buckets) {
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i].first <= list[i - 1].first) error("buckets out of order: " + series);
      if (list[i].second < list[i - 1].second) error("buckets not cumulative: " + series);
    }
    if (list.empty() || !std::isinf(list.back().first)) {
      error("histogram without a +Inf bucket: " + series);
    } else if (!counts.count(series) || counts[series] != list.back().second) {
      error("+Inf bucket differs from _count: " + series);
    }
  }
  return out;
}

}  // namespace hookbox::testing
