// libFuzzer harness: the config loader on arbitrary YAML. It must report errors, never throw
// or crash; secrets are not resolved (no environment or files are read).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  hookbox::LoadResult r = hookbox::LoadConfigText(text, "fuzz.yaml", {.resolve_secrets = false});
  if (r.config && !r.errors.empty()) __builtin_trap();  // a config only without errors
  return 0;
}
