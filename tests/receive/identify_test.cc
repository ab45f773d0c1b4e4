// Unit tests of identification: provider defaults, configured sources, the sha256 fallback,
// bounds on client-controlled fields, and sequence values.
#include "receive/identify.h"

#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "ops/clock.h"
#include "receive/receiver.h"

using namespace hookbox;

namespace {

Endpoint Ep(Provider p) {
  Endpoint e;
  e.name = "ep";
  e.provider = p;
  return e;
}

// Identify as the receiver calls it, given what verification found: the body, the signed
// message (twilio, square) and the header of the signed id (standard), each as verify.h's
// Verified holds it (tests/verify/ shows each scheme filling them in).
StatusOr<Identity> IdentifyVerified(const Endpoint& endpoint, const Headers& headers,
                                    std::string_view body, std::string_view id_header = {},
                                    std::string signed_message = {}) {
  Verified verified;
  verified.signed_message = std::move(signed_message);
  verified.body = body;
  verified.id_header = id_header;
  return Identify(endpoint, headers, verified);
}

}  // namespace

TEST_CASE("provider defaults for id and type") {
  SECTION("stripe: body /id and /type") {
    auto id =
        IdentifyVerified(Ep(Provider::kStripe), {}, R"({"id":"evt_1","type":"invoice.paid"})");
    REQUIRE(id.ok());
    CHECK(id->event_id == "evt_1");
    CHECK(id->id_source == "body:/id");
    CHECK(id->event_type == "invoice.paid");
  }
  SECTION("github: headers") {
    Headers h = {{"x-github-delivery", "d-1"}, {"X-GitHub-Event", "push"}};
    auto id = IdentifyVerified(Ep(Provider::kGithub), h, "{}");
    CHECK(id->event_id == "d-1");
    CHECK(id->id_source == "header:X-GitHub-Delivery");
    CHECK(id->event_type == "push");
  }
  SECTION("standard: the id of the header the signature covers") {
    const Endpoint ep = Ep(Provider::kStandard);
    auto a = IdentifyVerified(ep, {{"webhook-id", "msg_1"}}, R"({"type":"t"})", "webhook-id");
    CHECK(a->event_id == "msg_1");
    CHECK(a->event_type == "t");
    // svix-signed, with an added webhook-id the signature does not cover: the svix-id.
    Headers replay = {{"svix-id", "msg_signed"}, {"webhook-id", "anything"}};
    auto b = IdentifyVerified(ep, replay, "{}", "svix-id");
    REQUIRE(b.ok());
    CHECK(b->event_id == "msg_signed");
    CHECK(b->id_source == "header:svix-id");
    // webhook-signed: the webhook-id, never a svix-id, even when webhook-id is missing.
    auto c = IdentifyVerified(ep, {{"webhook-id", "msg_w"}, {"svix-id", "s"}}, "{}", "webhook-id");
    CHECK(c->event_id == "msg_w");
    auto d = IdentifyVerified(ep, {{"svix-id", "s"}}, "{}", "webhook-id");
    CHECK(d->id_source == "sha256");
    // A configured event_id wins over the signed header, as for every provider.
    Endpoint configured = ep;
    configured.event_id = FieldRef{FieldRef::From::kBody, "/id"};
    auto e = IdentifyVerified(configured, replay, R"({"id":"mine"})", "svix-id");
    CHECK(e->event_id == "mine");
  }
  SECTION("shopify: X-Shopify-Event-Id, else X-Shopify-Webhook-Id") {
    auto a = IdentifyVerified(Ep(Provider::kShopify),
                              {{"X-Shopify-Event-Id", "e"},
                               {"X-Shopify-Webhook-Id", "w"},
                               {"X-Shopify-Topic", "orders/create"}},
                              "{}");
    CHECK(a->event_id == "e");
    CHECK(a->event_type == "orders/create");
    auto b = IdentifyVerified(Ep(Provider::kShopify), {{"X-Shopify-Webhook-Id", "w"}}, "{}");
    CHECK(b->event_id == "w");
  }
  SECTION("slack: body /event_id and /event/type") {
    auto a = IdentifyVerified(Ep(Provider::kSlack), {},
                              R"({"event_id":"Ev1","event":{"type":"message"}})");
    CHECK(a->event_id == "Ev1");
    CHECK(a->event_type == "message");
  }
  SECTION("gitlab: Idempotency-Key, else X-Gitlab-Event-UUID") {
    auto a =
        IdentifyVerified(Ep(Provider::kGitlab),
                         {{"X-Gitlab-Event-UUID", "u"}, {"X-Gitlab-Event", "Push Hook"}}, "{}");
    CHECK(a->event_id == "u");
    CHECK(a->event_type == "Push Hook");
    auto b = IdentifyVerified(Ep(Provider::kGitlab),
                              {{"Idempotency-Key", "k"}, {"X-Gitlab-Event-UUID", "u"}}, "{}");
    CHECK(b->event_id == "k");
  }
  SECTION("paddle, square: body /event_id; /event_type, /type") {
    auto a =
        IdentifyVerified(Ep(Provider::kPaddle), {}, R"({"event_id":"evt_1","event_type":"a.b"})");
    CHECK(a->event_id == "evt_1");
    CHECK(a->event_type == "a.b");
    auto b = IdentifyVerified(Ep(Provider::kSquare), {},
                              R"({"event_id":"e-2","type":"payment.created"})");
    CHECK(b->event_id == "e-2");
    CHECK(b->event_type == "payment.created");
  }
  SECTION("discord: the body hash, and /event/type") {
    const std::string body = R"({"version":1,"type":1,"event":{"type":"APPLICATION_AUTHORIZED"}})";
    auto a = IdentifyVerified(Ep(Provider::kDiscord), {}, body);
    CHECK(a->event_id == "sha256:" + Sha256Hex(body));
    CHECK(a->event_type == "APPLICATION_AUTHORIZED");
  }
  SECTION("twilio: the signed message's hash, never the unsigned token; type twilio") {
    const std::string form = "MessageSid=SM1&MessageStatus=delivered";
    const std::string message = "https://example.com/hMessageSidSM1MessageStatusdelivered";
    auto a = IdentifyVerified(Ep(Provider::kTwilio), {{"I-Twilio-Idempotency-Token", "tok-1"}},
                              form, {}, message);
    CHECK(a->event_id == "sha256:" + Sha256Hex(message));
    CHECK(a->id_source == "sha256");
    CHECK(a->event_type == "twilio");
    auto b = IdentifyVerified(Ep(Provider::kTwilio), {{"I-Twilio-Idempotency-Token", "tok-2"}},
                              form, {}, message);
    CHECK(b->event_id == a->event_id);
    // The token only when the operator names it.
    Endpoint token = Ep(Provider::kTwilio);
    token.event_id = {FieldRef::From::kHeader, "I-Twilio-Idempotency-Token"};
    auto c = IdentifyVerified(token, {{"I-Twilio-Idempotency-Token", "tok-1"}}, form, {}, message);
    CHECK(c->event_id == "tok-1");
    CHECK(c->id_source == "header:I-Twilio-Idempotency-Token");
    // A configured type wins over the constant.
    Endpoint typed = Ep(Provider::kTwilio);
    typed.event_type = {FieldRef::From::kForm, "MessageStatus"};
    CHECK(IdentifyVerified(typed, {}, form)->event_type == "delivered");
  }
}

TEST_CASE("form:NAME reads a field of an application/x-www-form-urlencoded body") {
  Endpoint e = Ep(Provider::kHmac);
  e.event_id = {FieldRef::From::kForm, "MessageSid"};
  e.event_type = {FieldRef::From::kForm, "Event Type"};
  e.resource = {FieldRef::From::kForm, "CallSid"};
  e.sequence = {FieldRef::From::kForm, "SequenceNumber"};
  const std::string form =
      "CallSid=CA1&MessageSid=SM%2F1&Event+Type=call.st%C3%A4tus&SequenceNumber=3&MessageSid=SM2";
  auto id = IdentifyVerified(e, {}, form);
  REQUIRE(id.ok());
  CHECK(id->event_id == "SM/1");  // decoded; the first of a repeated field
  CHECK(id->id_source == "form:MessageSid");
  CHECK(id->event_type == "call.st\xc3\xa4tus");
  CHECK(id->resource_id == "CA1");
  CHECK(id->sequence_key == 3);
  // Absent, or a JSON body: the fallbacks, as for body: fields.
  auto absent = IdentifyVerified(e, {}, R"({"MessageSid":"SM1"})");
  CHECK(absent->id_source == "sha256");
  CHECK(absent->event_type.empty());
  // Decoded control characters are refused like any other identity field's.
  CHECK_FALSE(IdentifyVerified(e, {}, "MessageSid=a%0Ab").ok());
}

TEST_CASE("configured sources override the defaults") {
  Endpoint e = Ep(Provider::kHmac);
  e.event_id = {FieldRef::From::kBody, "/meta/id"};
  e.event_type = {FieldRef::From::kHeader, "X-Kind"};
  e.resource = {FieldRef::From::kBody, "/obj"};
  e.sequence = {FieldRef::From::kBody, "/version"};
  auto id =
      IdentifyVerified(e, {{"X-Kind", "k"}}, R"({"meta":{"id":123},"obj":"o-1","version":7})");
  REQUIRE(id.ok());
  CHECK(id->event_id == "123");  // numbers keep their JSON text
  CHECK(id->id_source == "body:/meta/id");
  CHECK(id->event_type == "k");
  CHECK(id->resource_id == "o-1");
  CHECK(id->sequence == "7");
  CHECK(id->sequence_key == 7);
}

TEST_CASE("missing, empty or non-JSON ids fall back to sha256 of the raw body") {
  for (const std::string& body :
       {std::string("{}"), std::string(R"({"id":""})"), std::string("not json"),
        std::string(R"({"id":{"nested":1}})"), std::string()}) {
    INFO(body);
    auto id = IdentifyVerified(Ep(Provider::kStripe), {}, body);
    REQUIRE(id.ok());
    CHECK(id->event_id == "sha256:" + Sha256Hex(body));
    CHECK(id->id_source == "sha256");
  }
}

TEST_CASE("identity fields are bounded") {
  auto long_id =
      IdentifyVerified(Ep(Provider::kGithub), {{"X-GitHub-Delivery", std::string(513, 'a')}}, "");
  CHECK(long_id.status().code() == Status::Code::kInvalidArgument);
  auto ok_id =
      IdentifyVerified(Ep(Provider::kGithub), {{"X-GitHub-Delivery", std::string(512, 'a')}}, "");
  CHECK(ok_id.ok());
  auto ctl = IdentifyVerified(Ep(Provider::kStripe), {}, R"({"id":"a\u0001b"})");
  CHECK(ctl.status().code() == Status::Code::kInvalidArgument);
  auto del = IdentifyVerified(Ep(Provider::kStripe), {},
                              "{\"id\":\"a\x7f"
                              "b\"}");
  CHECK(del.status().code() == Status::Code::kInvalidArgument);
  auto type = IdentifyVerified(Ep(Provider::kStripe), {}, R"({"id":"x","type":"a\nb"})");
  CHECK(type.status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("sequence keys: integers, RFC 3339 instants, nothing else") {
  CHECK(SequenceKey("42") == 42);
  CHECK(SequenceKey("-3") == -3);
  CHECK(SequenceKey("2026-01-01T00:00:00Z") == int64_t{1767225600} * 1000000);
  CHECK(SequenceKey("2026-01-01T01:00:00+01:00") == SequenceKey("2026-01-01T00:00:00Z"));
  CHECK(SequenceKey("2026-01-01T00:00:00.5Z") == int64_t{1767225600} * 1000000 + 500000);
  CHECK_FALSE(SequenceKey("").has_value());
  CHECK_FALSE(SequenceKey("12abc").has_value());
  CHECK_FALSE(SequenceKey("2026-13-01T00:00:00Z").has_value());
  CHECK_FALSE(SequenceKey("2026-01-01").has_value());
  CHECK_FALSE(SequenceKey("99999999999999999999").has_value());
}

TEST_CASE("stored times are fixed-width RFC 3339 UTC") {
  TimePoint t{std::chrono::milliseconds(1767225600123)};
  CHECK(FormatTime(t) == "2026-01-01T00:00:00.123Z");
  CHECK(ParseRfc3339Micros(FormatTime(t)) == int64_t{1767225600123} * 1000);
}

TEST_CASE("routes: every matching route's handlers, each once, in config order") {
  Endpoint e;
  e.routes = {{.events = {"invoice.*"}, .handlers = {{"a", "exec", {}}, {"b", "file", {}}}},
              {.events = {"*.paid", "push"}, .handlers = {{"c", "sql", {}}, {"a", "exec", {}}}}};
  CHECK(MatchHandlers(e, "invoice.paid", "") == std::vector<std::string>{"a", "b", "c"});
  CHECK(MatchHandlers(e, "push", "") == std::vector<std::string>{"c", "a"});
  CHECK(MatchHandlers(e, "customer.created", "").empty());
  CHECK(MatchHandlers(e, "", "").empty());
}

TEST_CASE("routes by content: every where: condition must hold of the body") {
  auto where = [](const std::vector<std::string>& texts) {
    std::vector<FieldMatch> out;
    for (const std::string& t : texts) out.push_back(ParseFieldMatch(t).value());
    return out;
  };
  Endpoint e;
  e.routes = {{.events = {"invoice.*"},
               .where = where({"/data/object/livemode=true", "/data/object/currency=eur"}),
               .handlers = {{"billing", "exec", {}}}},
              {.events = {"invoice.*"},
               .where = where({"/data/object/livemode=false"}),
               .handlers = {{"test-billing", "exec", {}}}},
              {.events = {"sms"},
               .where = where({"form:Body=stop now"}),
               .handlers = {{"unsubscribe", "exec", {}}}},
              {.events = {"*"}, .handlers = {{"audit", "file", {}}}}};
  using Names = std::vector<std::string>;
  const std::string live_eur = R"({"data":{"object":{"livemode":true,"currency":"eur"}}})";
  const std::string live_usd = R"({"data":{"object":{"livemode":true,"currency":"usd"}}})";
  const std::string test = R"({"data":{"object":{"livemode":false}}})";
  CHECK(MatchHandlers(e, "invoice.paid", live_eur) == Names{"billing", "audit"});
  CHECK(MatchHandlers(e, "invoice.paid", live_usd) == Names{"audit"});  // one of two fails
  CHECK(MatchHandlers(e, "invoice.paid", test) == Names{"test-billing", "audit"});
  // The type is the first test: the right body under another type takes no where: route.
  CHECK(MatchHandlers(e, "charge.paid", live_eur) == Names{"audit"});
  // A body that is not JSON, or lacks the member, matches no pointer; it is no error.
  CHECK(MatchHandlers(e, "invoice.paid", "livemode=true") == Names{"audit"});
  CHECK(MatchHandlers(e, "invoice.paid", R"({"data":{}})") == Names{"audit"});
  CHECK(MatchHandlers(e, "invoice.paid", R"({"data":{"object":{"livemode":true,)") ==
        Names{"audit"});
  // VALUE is compared with a string's text or a literal's JSON text: the string "true"
  // matches as the literal does (as `inbox list --where` finds it).
  CHECK(MatchHandlers(e, "invoice.paid",
                      R"({"data":{"object":{"livemode":"true","currency":"eur"}}})") ==
        Names{"billing", "audit"});
  // form: any spelling an encoder may give, between &s; a longer field does not match.
  CHECK(MatchHandlers(e, "sms", "From=%2B1555&Body=stop+now") == Names{"unsubscribe", "audit"});
  CHECK(MatchHandlers(e, "sms", "Body=stop%20now") == Names{"unsubscribe", "audit"});
  CHECK(MatchHandlers(e, "sms", "Body=stop+now+please") == Names{"audit"});
  CHECK(MatchHandlers(e, "sms", "XBody=stop+now") == Names{"audit"});

  // RouteMatches is the one rule; inbox show asks it of each route.
  CHECK(RouteMatches(e.routes[0], "invoice.created", live_eur));
  CHECK_FALSE(RouteMatches(e.routes[0], "invoice.created", test));
}

TEST_CASE("stored headers leave credentials out") {
  Headers h = {{"Authorization", "Bearer x"},
               {"X-Gitlab-Token", "secret"},
               {"Cookie", "c"},
               {"X-GitHub-Event", "push"},
               {"X-Multi", "1"},
               {"X-Multi", "2"}};
  std::string json = StoredHeadersJson(h);
  CHECK(json.find("Bearer") == std::string::npos);
  CHECK(json.find("secret") == std::string::npos);
  CHECK(json.find("Cookie") == std::string::npos);
  CHECK(json.find(R"("X-GitHub-Event":"push")") != std::string::npos);
  CHECK(json.find(R"("X-Multi":"1, 2")") != std::string::npos);
}
