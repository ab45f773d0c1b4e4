// The handler kinds, one row each: the kind's key in config.yaml and the factory in
// handlers/<kind>/ that builds it. This is the one list of kinds. The config loader takes
// the keys from it (config/ cannot ask handlers/registry.cc: handlers/ is built on config/,
// so that include would point the wrong way and config/ would no longer link alone), and
// handlers/registry.cc builds its table of factories from the same rows. Adding a kind is
// its folder (with the factory) plus one row here.
//
// An X-macro: HOOKBOX_HANDLER_KINDS(ROW) expands to ROW("key", Factory) once per kind.
#pragma once

#include <string_view>

#define HOOKBOX_HANDLER_KINDS(ROW) \
  ROW("exec", MakeExecHandler)     \
  ROW("http", MakeHttpHandler)     \
  ROW("file", MakeFileHandler)     \
  ROW("sql", MakeSqlHandler)

namespace hookbox {

#define HOOKBOX_HANDLER_KIND_KEY(key, factory) key,
// The kinds' keys, in the rows' order.
inline constexpr std::string_view kHandlerKinds[] = {
    HOOKBOX_HANDLER_KINDS(HOOKBOX_HANDLER_KIND_KEY)};
#undef HOOKBOX_HANDLER_KIND_KEY

}  // namespace hookbox
