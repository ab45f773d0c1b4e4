// The console's pages as HTML: one of the templates embedded from pages/ (cmake/
// embed_files.cmake) rendered with a view (JSON) inside layout.html, by Mustache (kainjow's,
// Debian's libkainjow-mustache-dev).
//
// Escaping happens here and nowhere else. Every {{value}} of a template is HTML-escaped by
// Mustache (& < > " '), and every text of the view is first made well-formed UTF-8
// (base/utf8.h): an event id, a header or a body is attacker-controlled text, and it reaches
// the page only as escaped text. The templates never use the unescaped forms ({{{value}}},
// {{&value}}): render_test.cc reads every template for them. Attribute values in the
// templates are always quoted, and the URLs put in them are built by the console from
// UrlEncode()d parts (base/form.h), so they cannot leave their attribute or start a scheme.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hookbox::console {

// The embedded file `name` (e.g. "list.html", "style.css"); nullopt when there is none.
std::optional<std::string_view> PageFile(std::string_view name);

// `page` (a template's file name) rendered with `view`, inside the layout; `view["title"]`
// is the page's title. Internal when `page` or the layout is not embedded or a template is
// not valid Mustache: a fault of the build, never of the request.
StatusOr<std::string> RenderPage(std::string_view page, const nlohmann::json& view);

}  // namespace hookbox::console
