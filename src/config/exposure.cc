// The inline-secret exposure check (exposure.h): which secrets a loaded config holds inline,
// and whether stat(2) says the file is readable beyond its owner.

#include "config/exposure.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

#include "config/yaml_reader.h"

namespace hookbox {
namespace {

// The handler YAML's `sign: {secret: {value: ...}}` (the http handler's re-signing secret).
bool SignsWithInlineSecret(const YAML::Node& handler) {
  // A missing key yields an invalid node: test it (operator bool) before asking its type,
  // which throws on an invalid node.
  if (!handler || !handler.IsMap()) return false;
  const YAML::Node sign = handler["sign"];
  if (!sign || !sign.IsMap()) return false;
  const YAML::Node secret = sign["secret"];
  return secret && secret.IsMap() && secret["value"];
}

std::string OwnerName(uid_t uid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return "uid " + std::to_string(uid);
}

// The file's group may read it when that group is the service's: the group this process runs
// in (serve and ExecStartPre's check-config run as the service), or `hookbox`, the Debian
// package's (its config is 0640 root:hookbox, and root's check-config must not cry wolf).
bool IsServiceGroup(gid_t gid) {
  if (gid == getegid()) return true;
  struct group gr;
  struct group* found = nullptr;
  char buf[4096];
  return getgrgid_r(gid, &gr, buf, sizeof buf, &found) == 0 && found != nullptr &&
         std::string_view(found->gr_name) == "hookbox";
}

}  // namespace

std::vector<std::string> InlineSecretPlaces(const Config& config) {
  std::vector<std::string> places;
  if (config.admin_token && config.admin_token->source == "value")
    places.emplace_back("admin_token");
  for (const Endpoint& e : config.endpoints) {
    for (size_t i = 0; i < e.secrets.size(); ++i) {
      // The loader names an inline secret's source "value" (config.h, Secret).
      if (e.secrets[i].source == "value") {
        places.push_back("endpoint " + e.name + " secret " + std::to_string(i + 1));
      }
    }
    for (const Route& r : e.routes) {
      for (const HandlerSpec& h : r.handlers) {
        if (h.config && SignsWithInlineSecret(h.config->node)) {
          places.push_back("endpoint " + e.name + " handler " + h.name + " sign.secret");
        }
      }
    }
  }
  return places;
}

std::string ExposedSecrets::ModeText() const {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string ExposedSecrets::Message() const {
  std::string where;
  for (const std::string& p : places) where += (where.empty() ? "" : ", ") + p;
  return path + " is readable by " + ((mode & S_IROTH) ? "others" : "its group") + " (mode " +
         ModeText() + ", owner " + owner + ") and holds " + std::to_string(places.size()) +
         " inline secret(s) (" + where + "): " + kExposureFix;
}

std::optional<ExposedSecrets> CheckInlineSecretsExposure(const Config& config) {
  struct stat st;
  if (config.path.empty() || ::stat(config.path.c_str(), &st) != 0) return std::nullopt;
  if ((st.st_mode & S_IROTH) == 0 && ((st.st_mode & S_IRGRP) == 0 || IsServiceGroup(st.st_gid))) {
    return std::nullopt;
  }
  std::vector<std::string> places = InlineSecretPlaces(config);
  if (places.empty()) return std::nullopt;
  return ExposedSecrets{config.path, static_cast<unsigned>(st.st_mode & 07777),
                        OwnerName(st.st_uid), std::move(places)};
}

}  // namespace hookbox
