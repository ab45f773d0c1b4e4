// The `exec` handler kind: runs an operator's program for each event, argv as configured
// and never through a shell, the body on stdin and the event's fields in a minimal
// environment (HOOKBOX_*), in `/` or its `workdir:`; nothing it started outlives its
// attempt (children.h). Config: {command: [argv...], timeout: 30s,
// permanent_exit_codes: [65], env: {NAME: value}, concurrency: 16, workdir: /}.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "handlers/handler.h"

namespace hookbox {

// The kind's reader (handlers/registry.cc, at load) and factory. With host_checks,
// command[0], an absolute path or a bare name looked up on the daemon's PATH once, at load,
// must be an executable file then, and workdir a directory.
std::shared_ptr<const KindSettings> ReadExecSettings(YamlReader& reader, const YamlTree& settings,
                                                     const std::string& where,
                                                     const LoadOptions& options);
std::unique_ptr<Handler> MakeExecHandler(const KindSettings& settings, const std::string& where,
                                         std::vector<std::string>* errors);

}  // namespace hookbox
