// The console's renderer (src/console/render.h): the one place where text becomes HTML.
#include "console/render.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

using hookbox::console::PageFile;
using hookbox::console::RenderPage;
using nlohmann::json;

TEST_CASE("no page template writes a value unescaped") {
  // {{{x}}} and {{&x}} are Mustache's unescaped forms; the partial {{>content}} is a template.
  int pages = 0;
  for (const auto& entry : std::filesystem::directory_iterator(HOOKBOX_CONSOLE_PAGES)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    INFO(entry.path());
    CHECK(text.str().find("{{{") == std::string::npos);
    CHECK(text.str().find("{{&") == std::string::npos);
    CHECK(PageFile(entry.path().filename().string()).value() == text.str());  // embedded as is
    ++pages;
  }
  CHECK(pages >= 7);
}

TEST_CASE("every value is escaped and made valid UTF-8; empty text is false") {
  json view = {{"title", "t"},
               {"heading", "<h1 onclick=\"x\">'&'"},
               {"message", std::string("bad \xff byte and \0 NUL", 20)}};
  std::string html = RenderPage("message.html", view).value();
  CHECK(html.find("&lt;h1 onclick=&quot;x&quot;&gt;&apos;&amp;&apos;") != std::string::npos);
  CHECK(html.find("<h1 onclick") == std::string::npos);
  CHECK(html.find("bad \xEF\xBF\xBD byte and \xEF\xBF\xBD NUL") != std::string::npos);
  CHECK(html.find("<title>t · hookbox</title>") != std::string::npos);

  std::string login = RenderPage("login.html", {{"title", "Sign in"}, {"failed", ""}}).value();
  CHECK(login.find("not the admin token") == std::string::npos);
  std::string failed = RenderPage("login.html", {{"title", "Sign in"}, {"failed", true}}).value();
  CHECK(failed.find("not the admin token") != std::string::npos);
}

TEST_CASE("a page that is not embedded is an Internal status, not an exception") {
  hookbox::StatusOr<std::string> html = RenderPage("no-such-page.html", {{"title", "t"}});
  REQUIRE_FALSE(html.ok());
  CHECK(html.status().code() == hookbox::Status::Code::kInternal);
  CHECK(html.status().ToString() == "console page not rendered: no page no-such-page.html");
}
