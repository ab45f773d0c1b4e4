#!/usr/bin/env python3
"""Writes the provider seeds of two fuzz corpora: tests/fuzz/corpus/receive/<provider>-*
(the input layout fuzz_receive.cc reads, with its signing byte set, so the harness signs
each body as the provider would at replay time and the seed replays the same on any day)
and tests/fuzz/corpus/http/<provider>-* (raw HTTP requests with each provider's real
headers, signed with fixed example secrets; the http harness only parses them).

Run from anywhere: python3 tests/fuzz/make_receive_seeds.py. The files it writes are
committed; rerunning rewrites them byte for byte (no clock, no randomness).
"""

import base64
import hashlib
import hmac
import json
import os
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))

# fuzz_receive.cc's tables, in its order.
PATHS = ["/hooks/stripe", "/hooks/github", "/hooks/standard", "/hooks/shopify", "/hooks/slack",
         "/hooks/slack-commands", "/hooks/gitlab", "/hooks/paddle", "/hooks/square",
         "/hooks/discord", "/hooks/twilio", "/hooks/hmac", "/hooks/open"]
HEADER_NAMES = [
    "Stripe-Signature", "X-Hub-Signature-256", "X-Hub-Signature", "X-GitHub-Delivery",
    "X-GitHub-Event", "webhook-id", "webhook-timestamp", "webhook-signature", "svix-id",
    "svix-timestamp", "svix-signature", "X-Shopify-Hmac-Sha256", "X-Shopify-Event-Id",
    "X-Shopify-Webhook-Id", "X-Shopify-Topic", "X-Slack-Signature", "X-Slack-Request-Timestamp",
    "X-Gitlab-Token", "X-Gitlab-Event", "X-Gitlab-Event-UUID", "Idempotency-Key",
    "Paddle-Signature", "x-square-hmacsha256-signature", "X-Signature-Ed25519",
    "X-Signature-Timestamp", "X-Twilio-Signature", "X-Twilio-Webhooks-Signature-Settings",
    "I-Twilio-Idempotency-Token", "X-Signature", "X-Event-Id", "X-Event-Type", "Content-Type",
    "Authorization", "Cookie"]
METHODS = ["POST", "GET", "PUT"]
UNSIGNED, SIGN, VARIANT, OTHER_VARIANT = 0, 1, 2, 3


def fdp_string(text: bytes, max_length: int) -> bytes:
    """What FuzzedDataProvider::ConsumeRandomLengthString(max_length) reads back as `text`."""
    assert len(text) <= max_length
    out = text.replace(b"\\", b"\\\\")
    # A backslash then any other byte ends the string; at max_length it ends by itself.
    return out + (b"\\x" if len(text) < max_length else b"")


def receive_input(path_index, body, method="POST", query=b"", headers=(), mode=SIGN,
                  event_id=b"", event_type=b"", path=b""):
    """One fuzz_receive input. Integers are read from the end, one byte each, in call order;
    strings from the front; the body is what is left between them. `path` is read only when
    path_index is one past PATHS ("any path")."""
    front = fdp_string(path, 32) if path_index == len(PATHS) else b""
    back = [METHODS.index(method), path_index]
    front += fdp_string(query, 64)
    back.append(len(headers))
    for name, value in headers:
        back.append(HEADER_NAMES.index(name))
        front += fdp_string(value, 80)
    back.append(mode)
    front += fdp_string(event_id, 40)
    front += fdp_string(event_type, 40)
    return front + body + bytes(reversed(back))


def j(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def form(fields) -> bytes:
    return urllib.parse.urlencode(fields).encode()


STRIPE = j({"id": "evt_1NG8Du2eZvKYlo2CUI79vXWy", "object": "event", "api_version": "2022-11-15",
            "created": 1686089970, "type": "invoice.paid", "livemode": False,
            "data": {"object": {"id": "in_1NG8Dt2eZvKYlo2C", "object": "invoice",
                                "amount_paid": 2000, "currency": "usd", "status": "paid"}}})
GITHUB_PUSH = j({"ref": "refs/heads/main", "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                 "after": "0000000000000000000000000000000000000000",
                 "repository": {"id": 186853002, "full_name": "octo-org/hello-world"},
                 "pusher": {"name": "octocat"}, "commits": []})
STANDARD = j({"type": "invoice.paid", "timestamp": "2026-12-02T21:00:00Z",
              "data": {"id": "inv_123", "amount": 2000}})
SHOPIFY = j({"id": 820982911946154508, "email": "jon@example.com", "total_price": "403.00",
             "financial_status": "paid", "admin_graphql_api_id": "gid://shopify/Order/8209"})
SLACK_EVENT = j({"token": "XXYYZZ", "team_id": "T123ABC456", "api_app_id": "A123ABC456",
                 "event": {"type": "app_mention", "user": "U123ABC456", "text": "<@U0LAN0Z89> hi",
                           "ts": "1515449522.000016", "channel": "C123ABC456"},
                 "type": "event_callback", "event_id": "Ev123ABC456", "event_time": 1515449522})
SLACK_CHALLENGE = j({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "type": "url_verification",
                     "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
SLACK_COMMAND = form([("token", "gIkuvaNzQIHg97ATvDxqgjtO"), ("team_id", "T0001"),
                      ("team_domain", "example"), ("channel_id", "C2147483705"),
                      ("channel_name", "test"), ("user_id", "U2147483697"),
                      ("user_name", "Steve"), ("command", "/deploy"), ("text", "api to prod"),
                      ("api_app_id", "A123456"),
                      ("response_url", "https://hooks.slack.com/commands/1234/5678"),
                      ("trigger_id", "13345224609.738474920.8088930838d88f008e0")])
GITLAB = j({"object_kind": "push", "event_name": "push", "before": "95790bf8",
            "after": "da1560886d", "ref": "refs/heads/master", "user_id": 4,
            "project": {"id": 15, "path_with_namespace": "mike/diaspora"}, "commits": []})
PADDLE = j({"event_id": "evt_01h8bzakzx3hm2fmen703n5q45", "event_type": "transaction.completed",
            "occurred_at": "2026-12-02T21:00:00.000000Z", "notification_id": "ntf_01h8bzam1z32",
            "data": {"id": "txn_01h8bz8ts9ex5z6s1g6f4zfsjm", "status": "completed"}})
SQUARE = j({"merchant_id": "6SSW7HV8K2ST5", "type": "payment.created",
            "event_id": "13b867cf-db3d-4b1c-90b6-2f32a9d78124",
            "created_at": "2026-12-02T21:00:00.000Z",
            "data": {"type": "payment", "id": "KkAkhdMsgzn59SM8A89WgKwekxLZY",
                     "object": {"payment": {"id": "KkAkhdMsgzn59SM8A89WgKwekxLZY",
                                            "status": "APPROVED"}}}})
DISCORD_EVENT = j({"version": 1, "application_id": "1234567890", "type": 1,
                   "event": {"type": "APPLICATION_AUTHORIZED", "timestamp": "2026-12-02T21:00:00Z",
                             "data": {"integration_type": 0, "user": {"id": "53908232506183680"}}}})
DISCORD_PING = j({"version": 1, "application_id": "1234567890", "type": 0})
TWILIO_SMS = form([("ToCountry", "US"), ("SmsMessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
                   ("NumMedia", "0"), ("SmsSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
                   ("SmsStatus", "received"), ("Body", "Hello from Twilio & co"),
                   ("To", "+15558675310"), ("NumSegments", "1"),
                   ("MessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
                   ("AccountSid", "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"), ("From", "+14158141829"),
                   ("ApiVersion", "2010-04-01")])
TWILIO_STATUS = form([("MessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
                      ("MessageStatus", "delivered"), ("SequenceNumber", "2"),
                      ("AccountSid", "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
                      ("To", "+15558675310"), ("From", "+14158141829")])
TWILIO_JSON = j({"account_sid": "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "level": "ERROR",
                 "payload": {"error_code": "11200", "more_info": "https://example.com"},
                 "sid": "NO00000000000000000000000000000000"})
HMAC_BODY = j({"id": "ord_42", "kind": "order.shipped", "at": "2026-12-02T21:00:00Z"})
OPEN = j({"id": "o-1", "obj": "thing-7", "seq": 3, "type": "thing.changed"})

P = {p.rsplit("/", 1)[1]: i for i, p in enumerate(PATHS)}

RECEIVE_SEEDS = {
    "stripe-invoice-paid": receive_input(P["stripe"], STRIPE),
    "github-push": receive_input(P["github"], GITHUB_PUSH,
                                 event_id=b"72d3162e-cc78-11e3-81ab-4c9367dc0958",
                                 event_type=b"push"),
    "standard-v1": receive_input(P["standard"], STANDARD,
                                 event_id=b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"),
    "standard-v1a": receive_input(P["standard"], STANDARD, mode=VARIANT,
                                  event_id=b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4X"),
    "standard-svix": receive_input(P["standard"], STANDARD, mode=OTHER_VARIANT,
                                   event_id=b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4Y"),
    "shopify-order": receive_input(P["shopify"], SHOPIFY,
                                   headers=[("X-Shopify-Webhook-Id",
                                             b"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"),
                                            ("Content-Type", b"application/json")],
                                   event_id=b"98880550-7158-44d4-b7cd-2c97c8a091b5",
                                   event_type=b"orders/create"),
    "slack-event": receive_input(P["slack"], SLACK_EVENT),
    "slack-challenge": receive_input(P["slack"], SLACK_CHALLENGE),
    "slack-command-form": receive_input(
        P["slack-commands"], SLACK_COMMAND,
        headers=[("Content-Type", b"application/x-www-form-urlencoded")]),
    "gitlab-push": receive_input(P["gitlab"], GITLAB,
                                 event_id=b"f1d51fcd-0b12-4bbd-a4c7-e0a2e3a4c1a0",
                                 event_type=b"Push Hook"),
    "paddle-transaction": receive_input(P["paddle"], PADDLE),
    "square-payment": receive_input(P["square"], SQUARE),
    "square-query": receive_input(P["square"], SQUARE, query=b"env=prod&token=abc"),
    "discord-event": receive_input(P["discord"], DISCORD_EVENT),
    "discord-ping": receive_input(P["discord"], DISCORD_PING),
    "twilio-sms-form": receive_input(
        P["twilio"], TWILIO_SMS,
        headers=[("Content-Type", b"application/x-www-form-urlencoded"),
                 ("I-Twilio-Idempotency-Token", b"8b0c9e1a-2c77-4d2b-9f3c-1e2f3a4b5c6d")]),
    "twilio-status-query": receive_input(P["twilio"], TWILIO_STATUS, query=b"account=main&x=1"),
    "twilio-json-bodysha256": receive_input(P["twilio"], TWILIO_JSON, query=b"type=debugger",
                                            mode=VARIANT),
    "twilio-sha256-settings": receive_input(P["twilio"], TWILIO_STATUS, mode=OTHER_VARIANT),
    "hmac-order": receive_input(P["hmac"], HMAC_BODY,
                                headers=[("X-Event-Id", b"ord_42-1"),
                                         ("X-Event-Type", b"order.shipped")]),
    "open-unsigned": receive_input(P["open"], OPEN, mode=UNSIGNED),
    "stripe-unsigned": receive_input(P["stripe"], STRIPE, mode=UNSIGNED,
                                     headers=[("Stripe-Signature", b"t=1686089970,v1=00,v0=11")]),
    "any-path": receive_input(len(PATHS), OPEN, mode=UNSIGNED, path=b"/hooks/nowhere"),
    "github-get": receive_input(P["github"], GITHUB_PUSH, method="GET"),
}

# The GitHub event bodies of the old seeds (tests/fuzz/corpus/identify/gh-*), as signed
# deliveries with their event names.
for name in sorted(os.listdir(os.path.join(HERE, "corpus", "identify"))):
    if name.startswith("gh-") and name.endswith("-0"):
        event = name[3:-2].encode()
        with open(os.path.join(HERE, "corpus", "identify", name), "rb") as f:
            body = f.read()
        RECEIVE_SEEDS["github-signed-" + name[3:-2]] = receive_input(
            P["github"], body, event_id=b"d0f1e2a3-" + event, event_type=event)


# ---- raw HTTP requests for the http harness (fixed secrets and times: it only parses)

TS = "1764709200"


def hmac_hex(key, msg, algo=hashlib.sha256):
    return hmac.new(key, msg, algo).hexdigest()


def hmac_b64(key, msg, algo=hashlib.sha256):
    return base64.b64encode(hmac.new(key, msg, algo).digest()).decode()


def request(target, headers, body):
    head = f"POST {target} HTTP/1.1\r\nHost: hooks.example.com\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def ed25519_hex(message):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
    return key.sign(message).hex()


SMALL_STRIPE = j({"id": "evt_1", "type": "invoice.paid", "created": 1764709200,
                  "data": {"object": {"id": "in_1"}}})
SMALL_SQUARE = j({"event_id": "13b867cf", "type": "payment.created", "data": {"id": "Kk1"}})
SMALL_SMS = form([("MessageSid", "SM1f0e"), ("Body", "Hi & bye"), ("From", "+14158141829"),
                  ("To", "+15558675310")])
SMALL_COMMAND = form([("command", "/deploy"), ("text", "api"), ("trigger_id", "1334.73"),
                      ("channel_id", "C2147483705")])
SMALL_DISCORD = j({"type": 1, "event": {"type": "APPLICATION_AUTHORIZED"}})
SMALL_STANDARD = j({"type": "invoice.paid", "data": {"id": "inv_1"}})
SMALL_PADDLE = j({"event_id": "evt_01h8", "event_type": "transaction.completed"})
SMALL_GITLAB = j({"object_kind": "push", "ref": "refs/heads/master"})
SMALL_SHOPIFY = j({"id": 820982911946154508, "total_price": "403.00"})
SMALL_SLACK = j({"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention"}})
SMALL_HMAC = j({"id": "ord_42", "kind": "order.shipped"})
STANDARD_KEY = base64.b64decode("c2VjcmV0LWZvci1mdXp6")
SQUARE_URL = "https://example.com/hooks/square"
TWILIO_URL = "https://example.com/hooks/twilio"


def twilio_sorted(body):
    fields = sorted(set(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)))
    return "".join(n + v for n, v in fields).encode()


# What the Standard Webhooks seeds sign (id.timestamp.body), and the hex SHA-256 of the body
# Twilio's bodySHA256 query parameter carries.
STANDARD_SIGNED = b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W." + TS.encode() + b"." + SMALL_STANDARD
HMAC_BODY_SHA256 = hashlib.sha256(SMALL_HMAC).hexdigest()

HTTP_SEEDS = {
    "stripe-signed-post": request("/hooks/stripe", [
        ("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)"),
        ("Content-Type", "application/json; charset=utf-8"),
        ("Stripe-Signature",
         f"t={TS},v1=" + hmac_hex(b"whsec_stripe_fuzz", TS.encode() + b"." + SMALL_STRIPE))],
        SMALL_STRIPE),
    "standard-signed-post": request("/hooks/standard", [
        ("Content-Type", "application/json"), ("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"),
        ("webhook-timestamp", TS),
        ("webhook-signature", "v1," + hmac_b64(STANDARD_KEY, STANDARD_SIGNED))],
        SMALL_STANDARD),
    "svix-signed-post": request("/hooks/standard", [
        ("Content-Type", "application/json"), ("svix-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"),
        ("svix-timestamp", TS),
        ("svix-signature", "v1," + hmac_b64(STANDARD_KEY, STANDARD_SIGNED))],
        SMALL_STANDARD),
    "shopify-signed-post": request("/hooks/shopify", [
        ("Content-Type", "application/json"), ("X-Shopify-Topic", "orders/create"),
        ("X-Shopify-Hmac-Sha256", hmac_b64(b"shopify-fuzz", SMALL_SHOPIFY)),
        ("X-Shopify-Shop-Domain", "example.myshopify.com"), ("X-Shopify-API-Version", "2024-01"),
        ("X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"),
        ("X-Shopify-Event-Id", "98880550-7158-44d4-b7cd-2c97c8a091b5")],
        SMALL_SHOPIFY),
    "slack-signed-event": request("/hooks/slack", [
        ("Content-Type", "application/json"), ("X-Slack-Request-Timestamp", TS),
        ("X-Slack-Signature",
         "v0=" + hmac_hex(b"slack-fuzz", b"v0:" + TS.encode() + b":" + SMALL_SLACK))],
        SMALL_SLACK),
    "slack-signed-command-form": request("/hooks/slack-commands", [
        ("Content-Type", "application/x-www-form-urlencoded"), ("X-Slack-Request-Timestamp", TS),
        ("X-Slack-Signature",
         "v0=" + hmac_hex(b"slack-fuzz", b"v0:" + TS.encode() + b":" + SMALL_COMMAND))],
        SMALL_COMMAND),
    "gitlab-token-post": request("/hooks/gitlab", [
        ("Content-Type", "application/json"), ("User-Agent", "GitLab/16.0.0"),
        ("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", "gitlab-fuzz-token"),
        ("X-Gitlab-Instance", "https://gitlab.example.com"),
        ("X-Gitlab-Event-UUID", "f1d51fcd-0b12-4bbd-a4c7-e0a2e3a4c1a0"),
        ("Idempotency-Key", "f1d51fcd-0b12-4bbd-a4c7-e0a2e3a4c1a1")],
        SMALL_GITLAB),
    "paddle-signed-post": request("/hooks/paddle", [
        ("Content-Type", "application/json"),
        ("Paddle-Signature",
         f"ts={TS};h1=" + hmac_hex(b"pdl_ntfset_fuzz", TS.encode() + b":" + SMALL_PADDLE))],
        SMALL_PADDLE),
    "square-signed-query": request("/hooks/square?env=prod", [
        ("Content-Type", "application/json"), ("User-Agent", "Square Connect v2"),
        ("x-square-hmacsha256-signature",
         hmac_b64(b"square-fuzz-key", (SQUARE_URL + "?env=prod").encode() + SMALL_SQUARE))],
        SMALL_SQUARE),
    "discord-signed-post": request("/hooks/discord", [
        ("Content-Type", "application/json"),
        ("User-Agent", "Discord-Interactions/1.0 (+https://discord.com)"),
        ("X-Signature-Ed25519", ed25519_hex(TS.encode() + SMALL_DISCORD)),
        ("X-Signature-Timestamp", TS)],
        SMALL_DISCORD),
    "twilio-signed-form": request("/hooks/twilio?account=main", [
        ("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8"),
        ("User-Agent", "TwilioProxy/1.1"), ("I-Twilio-Idempotency-Token", "8b0c9e1a-2c77-4d2b"),
        ("X-Twilio-Signature",
         hmac_b64(b"twilio-fuzz-token",
                  (TWILIO_URL + "?account=main").encode() + twilio_sorted(SMALL_SMS),
                  hashlib.sha1))],
        SMALL_SMS),
    "twilio-signed-json-bodysha256": request(
        "/hooks/twilio?bodySHA256=" + HMAC_BODY_SHA256, [
            ("Content-Type", "application/json"),
            ("X-Twilio-Signature",
             hmac_b64(b"twilio-fuzz-token",
                      (TWILIO_URL + "?bodySHA256=" + HMAC_BODY_SHA256).encode(), hashlib.sha1))],
        SMALL_HMAC),
    "hmac-signed-post": request("/hooks/hmac", [
        ("Content-Type", "application/json"), ("X-Event-Id", "ord_42-1"),
        ("X-Event-Type", "order.shipped"),
        ("X-Signature", "sha512=" + hmac_b64(b"hmac-fuzz", SMALL_HMAC, hashlib.sha512))],
        SMALL_HMAC),
}


def write(folder, seeds):
    for name, data in seeds.items():
        with open(os.path.join(HERE, "corpus", folder, name), "wb") as f:
            f.write(data)


write("receive", RECEIVE_SEEDS)
write("http", HTTP_SEEDS)
print(f"{len(RECEIVE_SEEDS)} receive seeds, {len(HTTP_SEEDS)} http seeds")
