// The two early returns every fallible step writes, spelled once: RETURN_IF_ERROR(expr)
// returns the failure of a Status (or of a StatusOr's status) and goes on when it is ok;
// ASSIGN_OR_RETURN(lhs, expr) returns the failure of a StatusOr, or moves its value into
// `lhs` (a declaration such as `auto rows` or `const SqlRows& rows`, or a variable). Both
// evaluate `expr` once, and may be nested (a lambda inside `expr` may use them too). The
// function they are used in returns a Status or any StatusOr.
#pragma once

#include <utility>

#include "base/status.h"

namespace hookbox::status_macros {
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const StatusOr<T>& s) {
  return s.status();
}
}  // namespace hookbox::status_macros

#define HOOKBOX_MACRO_CONCAT_INNER(a, b) a##b
#define HOOKBOX_MACRO_CONCAT(a, b) HOOKBOX_MACRO_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                                     \
  do {                                                            \
    if (auto&& hookbox_status_ = (expr); !hookbox_status_.ok()) { \
      return ::hookbox::status_macros::StatusOf(hookbox_status_); \
    }                                                             \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, expr) \
  HOOKBOX_ASSIGN_OR_RETURN_IMPL(HOOKBOX_MACRO_CONCAT(hookbox_or_, __COUNTER__), lhs, expr)

#define HOOKBOX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
