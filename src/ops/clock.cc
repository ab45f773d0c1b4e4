// RFC 3339 formatting and parsing for stored times and sequence values (see clock.h).
#include "ops/clock.h"

#include <cctype>
#include <cstdio>
#include <ctime>

#include "base/ascii.h"

namespace hookbox {

std::string FormatTime(TimePoint t) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  int frac = static_cast<int>(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];  // 24 used; the rest quiets -Wformat-truncation, which sizes the ints at most
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

namespace {

// Reads exactly n digits at text[pos...] into *out.
bool Digits(std::string_view text, size_t& pos, size_t n, int* out) {
  if (pos + n > text.size()) return false;
  const std::optional<int64_t> v = ParseAsciiDigits(text.substr(pos, n));
  if (!v) return false;
  pos += n;
  *out = static_cast<int>(*v);
  return true;
}

// Takes `c` at text[pos], in either case.
bool Expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || AsciiLower(text[pos]) != AsciiLower(c)) return false;
  ++pos;
  return true;
}

}  // namespace

std::optional<int64_t> ParseRfc3339Micros(std::string_view text) {
  size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(text, pos, 4, &year) || !Expect(text, pos, '-') || !Digits(text, pos, 2, &month) ||
      !Expect(text, pos, '-') || !Digits(text, pos, 2, &day) ||
      !(Expect(text, pos, 'T') || Expect(text, pos, ' ')) || !Digits(text, pos, 2, &hour) ||
      !Expect(text, pos, ':') || !Digits(text, pos, 2, &minute) || !Expect(text, pos, ':') ||
      !Digits(text, pos, 2, &second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0 || digits > 9) return std::nullopt;
    for (size_t i = digits; i < 6; ++i) micros *= 10;
  }
  int offset_minutes = 0;
  if (Expect(text, pos, 'Z')) {
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!Digits(text, pos, 2, &oh) || !Expect(text, pos, ':') || !Digits(text, pos, 2, &om) ||
        oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t secs = static_cast<int64_t>(timegm(&tm)) - int64_t{offset_minutes} * 60;
  return secs * 1000000 + micros;
}

}  // namespace hookbox
