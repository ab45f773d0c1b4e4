// application/x-www-form-urlencoded, both ways: the fields of a query string or a form body
// (as the WHATWG URL standard parses them: '&'-separated, '+' is a space, %XX is a byte,
// a malformed % sequence stays as it is), and the encoding of a value for a query string.
// The console reads its filters and forms with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hookbox {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// The fields in order, names and values decoded. Empty pieces ("a&&b") are skipped.
FormFields ParseUrlEncoded(std::string_view text);

// The most fields a form body may have where it is parsed before its signature is checked
// (twilio): a real request has a few dozen; a 1 MiB body of `a&a&...` would otherwise cost
// half a million allocations and a sort before the signature is refused (docs/SECURITY.md
// row 123).
inline constexpr size_t kMaxFormFields = 1000;

// How many fields ParseUrlEncoded would return, counted without decoding or allocating:
// one pass over the bytes.
size_t CountFormFields(std::string_view text);

// The first value of `name`, if present.
std::optional<std::string> FormValue(const FormFields& fields, std::string_view name);
// The same, "" when the field is absent.
inline std::string FormText(const FormFields& fields, std::string_view name) {
  return FormValue(fields, name).value_or("");
}

// `value` for a query string: letters, digits and -._~ as they are, every other byte %XX.
std::string UrlEncode(std::string_view value);

}  // namespace hookbox
