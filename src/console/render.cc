// Rendering the console's templates (see render.h).
#include "console/render.h"

#include <kainjow/mustache.hpp>
#include <map>

#include "base/utf8.h"

namespace hookbox::console {

extern const std::map<std::string_view, std::string_view> kPageFiles;

namespace {

namespace mustache = kainjow::mustache;

// The view as Mustache's data. Numbers become their text, null and "" are false;
// each string is made valid UTF-8 here, once, before Mustache escapes it.
mustache::data ToData(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      mustache::data d{mustache::data::type::object};
      for (const auto& [key, value] : j.items()) d.set(key, ToData(value));
      return d;
    }
    case nlohmann::json::value_t::array: {
      mustache::data d{mustache::data::type::list};
      for (const auto& item : j) d.push_back(ToData(item));
      return d;
    }
    case nlohmann::json::value_t::string:
      // An empty text is false, as in most Mustache implementations (kainjow's alone would
      // run {{#text}} sections for it); as a value it renders as nothing either way.
      if (j.get_ref<const std::string&>().empty()) return mustache::data(false);
      return mustache::data(ToValidUtf8(j.get_ref<const std::string&>()));
    case nlohmann::json::value_t::boolean:
      return mustache::data(j.get<bool>());
    case nlohmann::json::value_t::null:
      return mustache::data(false);
    default:
      return mustache::data(j.dump());
  }
}

}  // namespace

std::optional<std::string_view> PageFile(std::string_view name) {
  auto it = kPageFiles.find(name);
  if (it == kPageFiles.end()) return std::nullopt;
  return it->second;
}

StatusOr<std::string> RenderPage(std::string_view page, const nlohmann::json& view) {
  auto body = PageFile(page);
  if (!body) return Status::Internal("console page not rendered", "no page " + std::string(page));
  auto layout = PageFile("layout.html");
  if (!layout) return Status::Internal("console page not rendered", "no page layout.html");
  mustache::data data = ToData(view);
  const std::string_view page_text = *body;  // embedded: lives as long as the program
  data.set("content", mustache::partial([page_text] { return std::string(page_text); }));
  mustache::mustache tmpl{std::string(*layout)};
  if (!tmpl.is_valid()) {
    return Status::Internal("console page not rendered", "layout.html: " + tmpl.error_message());
  }
  std::string html = tmpl.render(data);
  if (!tmpl.is_valid()) {
    return Status::Internal("console page not rendered",
                            std::string(page) + ": " + tmpl.error_message());
  }
  return html;
}

}  // namespace hookbox::console
