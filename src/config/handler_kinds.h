// The handler kinds, one row each: the kind's key in config.yaml, the reader in
// handlers/<kind>/ that reads and checks its settings at load (with the loader's reader, so a
// kind's mistakes are reported with every other, FILE:LINE:COLUMN), the factory there that
// builds the handler from what the reader read, and the key of the kind's settings that says what
// it targets (its command, URL, folder or statements), from which an unnamed handler's stable name
// is derived (handler_names.cc, DerivedHandlerName; DESIGN.md, Handler names). This is the one list
// of kinds. The config loader takes the keys from it (config/ cannot ask handlers/registry.cc:
// handlers/ is built on config/, so that include would point the wrong way and config/ would no
// longer link alone), and handlers/registry.cc builds its tables of readers and factories from the
// same rows; the readers reach the loader through LoadOptions::kinds. Adding a kind is its folder
// (with the reader and the factory) plus one row here.
//
// An X-macro: HOOKBOX_HANDLER_KINDS(ROW) expands to ROW("key", Reader, Factory, "target") once
// per kind.
#pragma once

#include <string_view>

#define HOOKBOX_HANDLER_KINDS(ROW)                          \
  ROW("exec", ReadExecSettings, MakeExecHandler, "command") \
  ROW("http", ReadHttpSettings, MakeHttpHandler, "url")     \
  ROW("file", ReadFileSettings, MakeFileHandler, "dir")     \
  ROW("sql", ReadSqlSettings, MakeSqlHandler, "statements")

namespace hookbox {

#define HOOKBOX_HANDLER_KIND_KEY(key, reader, factory, target) key,
// The kinds' keys, in the rows' order.
inline constexpr std::string_view kHandlerKinds[] = {
    HOOKBOX_HANDLER_KINDS(HOOKBOX_HANDLER_KIND_KEY)};
#undef HOOKBOX_HANDLER_KIND_KEY

#define HOOKBOX_HANDLER_KIND_TARGET(key, reader, factory, target) target,
// Each kind's target key, in the same order as kHandlerKinds.
inline constexpr std::string_view kHandlerTargets[] = {
    HOOKBOX_HANDLER_KINDS(HOOKBOX_HANDLER_KIND_TARGET)};
#undef HOOKBOX_HANDLER_KIND_TARGET

}  // namespace hookbox
