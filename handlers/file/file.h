// The `file` handler kind: writes each event's body to <dir>/<endpoint>/<safe id>.json,
// atomically (temp file, fsync, rename, fsync of the directory), so a reader never sees a
// half-written file and a re-run overwrites the same file. Config: {dir: PATH}.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "handlers/handler.h"

namespace hookbox {

// The kind's reader (handlers/registry.cc, at load) and factory. With host_checks the reader
// creates `dir`, with its parents, if missing.
std::shared_ptr<const KindSettings> ReadFileSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options);
std::unique_ptr<Handler> MakeFileHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors);

// `text` as one file name that cannot leave its directory or hide: [A-Za-z0-9._-] are kept,
// every other byte (and a leading ".") becomes %XX, "" becomes "%". Distinct texts give
// distinct names; a name longer than 200 bytes keeps a prefix and ends in "~" and 32 hex
// digits of the text's SHA-256 ("~" never appears otherwise).
std::string SafeFileName(std::string_view text);

}  // namespace hookbox
