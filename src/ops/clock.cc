// RFC 3339 formatting and parsing for stored times and sequence values (see clock.h).
#include "ops/clock.h"

#include <cctype>
#include <ctime>

#include "base/ascii.h"

namespace hookbox {

std::string FormatTime(TimePoint t) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(t);
  const auto day = floor<days>(ms);
  const year_month_day date{day};
  const hh_mm_ss<milliseconds> time{ms - day};
  const int year = static_cast<int>(date.year());
  // Written digit by digit: every delivery formats a few of these, and gmtime_r with
  // snprintf cost 7,000 instructions an accept (bench/RESULTS.md, instructions per accept).
  // A TimePoint
  // (nanoseconds in 64 bits) is within 1677-2262: the year always has four digits.
  std::string out = "0000-00-00T00:00:00.000Z";
  auto put = [&out](size_t at, int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i, value /= 10)
      out[at + i] = static_cast<char>('0' + value % 10);
  };
  put(0, year, 4);
  put(5, static_cast<unsigned>(date.month()), 2);
  put(8, static_cast<unsigned>(date.day()), 2);
  put(11, time.hours().count(), 2);
  put(14, time.minutes().count(), 2);
  put(17, time.seconds().count(), 2);
  put(20, time.subseconds().count(), 3);
  return out;
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
