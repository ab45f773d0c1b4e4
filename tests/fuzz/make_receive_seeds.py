#!/usr/bin/env python3
"""Writes the provider seeds of three fuzz corpora, each in its harness's input layout:

- tests/fuzz/corpus/receive/: deliveries for fuzz_receive.cc. Its config is built from the
  provider table (src/config/providers.h), and so is this script's view of it: the rows are
  read from the HOOKBOX_PROVIDERS X-macro, and every row gets two seeds of its own (`<row>-
  table-defaults`, `<row>-table-fields`, one per endpoint of the row) that the harness signs
  with hookbox::Sign at replay time, so a new row is seeded by rerunning this script. Then
  deliveries with each provider's real bodies and headers; where Sign() cannot sign (public
  keys) or a scheme reads another spelling (svix-* names, a legacy or settings header, a body
  bound by a hash in the query), the seed carries a signature made here, at the harness's
  fixed clock, and the names Sign() does not show (the harness reads header names from its
  input too).
- tests/fuzz/corpus/verify/: fuzz_verify.cc inputs for the signatures Sign() does not make
  (the same spellings), valid at the time the input carries.
- tests/fuzz/corpus/http/: raw HTTP requests with each provider's real headers, signed with
  fixed example secrets (the http harness only parses them).

Run from anywhere: python3 tests/fuzz/make_receive_seeds.py. The files it writes are
committed; rerunning rewrites them byte for byte (no clock, no randomness).
"""

import base64
import hashlib
import hmac
import json
import os
import re
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---- the provider table, as src/config/providers.h writes it

def read_rows():
    """The rows of HOOKBOX_PROVIDERS in order: name and the fields the harnesses read, with
    the table's defaults for those a row leaves out."""
    with open(os.path.join(ROOT, "src", "config", "providers.h")) as f:
        text = f.read()
    macro = text[text.index("#define HOOKBOX_PROVIDERS(ROW)"):]
    macro = macro[:macro.index("\n\n")]
    rows = []
    for chunk in macro.split("ROW(k")[1:]:
        field = {k: v for k, v in re.findall(r"\.(\w+) = ([\w:]+|\"[^\"]*\")", chunk)}
        rows.append({
            "name": field["name"].strip('"'),
            "keys": field.get("keys", "Keys::kSecret").split("::")[1],
            "needs_public_url": field.get("needs_public_url") == "true",
            "hmac_block": field.get("hmac_block") == "true",
            "body": field.get("body", "BodyFormat::kJson").split("::")[1],
        })
    assert rows, "no rows in providers.h"
    return rows


ROWS = read_rows()
ROW = {row["name"]: row for row in ROWS}

# RFC 8032's first test key pair (section 7.1, TEST 1): the harnesses' public key entries.
ED25519_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
ED25519_HEX = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def ed25519(message: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    return Ed25519PrivateKey.from_private_bytes(ED25519_SEED).sign(message)


def fdp_string(text: bytes, max_length: int) -> bytes:
    """What FuzzedDataProvider::ConsumeRandomLengthString(max_length) reads back as `text`."""
    assert len(text) <= max_length
    out = text.replace(b"\\", b"\\\\")
    # A backslash then any other byte ends the string; at max_length it ends by itself.
    return out + (b"\\x" if len(text) < max_length else b"")


def as_bytes(value):
    return value if isinstance(value, bytes) else value.encode()


# ---- fuzz_receive.cc: its endpoints and its input layout

# The harness's receiver clock (kNow), and so the time of every signature made here.
NOW = 1764709200
TS = str(NOW)
METHODS = ["POST", "GET", "PUT"]
UNSIGNED, SIGN, SIGN_ROTATED = 0, 1, 2


def receive_secret(row, rotated=False):
    """The shared secret of a row's endpoints (fuzz_receive.cc, SecretsOf) as the HMAC key:
    whsec_ entries (Keys::kStandard) are the bytes they encode."""
    return (row["name"] + ("-fuzz-rotated" if rotated else "-fuzz-secret")).encode()


def public_url(path):
    return "https://example.com" + path


def receive_input(path, body, method="POST", query=b"", headers=(), mode=SIGN,
                  event_id=b"", event_type=b""):
    """One fuzz_receive input. Integers are read from the end, one byte each, in call order;
    strings from the front; the body is what is left between them. The path and every
    header name are given as strings (their "from the input" byte odd), so a seed does not
    depend on the order of the harness's endpoints or of the names it learns."""
    back = [METHODS.index(method), 1]
    front = fdp_string(as_bytes(path), 48)
    front += fdp_string(query, 128)
    back.append(len(headers))
    for name, value in headers:
        back.append(1)
        front += fdp_string(as_bytes(name), 40) + fdp_string(as_bytes(value), 192)
    back.append(mode)
    front += fdp_string(event_id, 40)
    front += fdp_string(event_type, 40)
    return front + body + bytes(reversed(back))


# ---- fuzz_verify.cc: its keys and its input layout

SIGNING_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # fuzz_providers.h, kSigningSecret
VERIFY_URLS = ["https://example.com/hooks/fuzz", "http://h", "https://u:p@[::1]:8443/a:b/c",
               "https://h.example:443"]
ALGORITHMS, ENCODINGS, PREFIXES = ["sha1", "sha256", "sha512"], ["hex", "base64"], ["", "sha256="]


def verify_input(row, headers, body, now=NOW, query=b"", url=0, algorithm="sha256",
                 encoding="hex", prefix="", key=b""):
    """One fuzz_verify input: the row by its index in the table, then as receive_input."""
    back = [ROWS.index(row)]
    front = fdp_string(key, 96)
    if row["needs_public_url"]:
        back.append(url)
    back += [ALGORITHMS.index(algorithm), ENCODINGS.index(encoding), PREFIXES.index(prefix)]
    back.append(len(headers))
    for name, value in headers:
        back.append(1)
        front += fdp_string(as_bytes(name), 40) + fdp_string(as_bytes(value), 256)
    back += list(now.to_bytes(4, "big"))  # ConsumeIntegral<uint32_t>: most significant first
    front += fdp_string(query, 128)
    return front + body + bytes(reversed(back))


def j(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def form(fields) -> bytes:
    return urllib.parse.urlencode(fields).encode()


def hmac_hex(key, msg, algo=hashlib.sha256):
    return hmac.new(key, msg, algo).hexdigest()


def hmac_b64(key, msg, algo=hashlib.sha256):
    return base64.b64encode(hmac.new(key, msg, algo).digest()).decode()


def twilio_sorted(body):
    fields = sorted(set(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)))
    return "".join(n + v for n, v in fields).encode()


# ---- bodies

# One body for every row's table seeds: each default id and type pointer of the table's JSON
# rows, and the fields of the `-fields` endpoints (resource /data/id, sequence /sequence).
TABLE_JSON = j({"id": "evt_t1", "event_id": "evt_t1", "type": "thing.created",
                "event_type": "thing.created", "event": {"type": "thing.created"},
                "data": {"id": "obj_1", "object": {"id": "obj_1"}}, "sequence": 3})
TABLE_FORM = form([("id", "evt_t1"), ("type", "thing.created"), ("resource", "obj_1"),
                   ("sequence", "3")])
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


def table_body(row):
    return TABLE_FORM if row["body"] == "kForm" else TABLE_JSON


# Every row the harness signs for (not the public-key rows: see below), at both of its
# endpoints, the second signed with the rotated secret.
RECEIVE_SEEDS = {}
for row in ROWS:
    if row["keys"] == "kEd25519Hex":
        continue
    name = row["name"]
    RECEIVE_SEEDS[name + "-table-defaults"] = receive_input(
        "/hooks/" + name, table_body(row), event_id=b"evt-" + name.encode(),
        event_type=b"thing.created")
    fields_headers = [] if row["body"] == "kForm" else [("X-Event-Id", "evt-" + name),
                                                        ("X-Event-Type", "thing.created")]
    RECEIVE_SEEDS[name + "-table-fields"] = receive_input(
        "/hooks/" + name + "/fields", table_body(row), headers=fields_headers,
        mode=SIGN_ROTATED)

# Signatures made here: Ed25519 (Sign() cannot), svix-* names, a legacy header, twilio's
# bodySHA256 query and HMAC-SHA256 settings.
STANDARD_KEY = receive_secret(ROW["standard"])
STANDARD_ID = b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4X"
STANDARD_V1A_SIGNED = STANDARD_ID + b"." + TS.encode() + b"." + STANDARD
SVIX_ID = b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4Y"
SVIX_SIGNED = SVIX_ID + b"." + TS.encode() + b"." + STANDARD
TWILIO_TOKEN = receive_secret(ROW["twilio"])
TWILIO_PUBLIC_URL = public_url("/hooks/twilio")
TWILIO_JSON_QUERY = b"type=debugger&bodySHA256=" + hashlib.sha256(TWILIO_JSON).hexdigest().encode()


def discord_headers(body):
    return [("X-Signature-Ed25519", ed25519(TS.encode() + body).hex()),
            ("X-Signature-Timestamp", TS)]


RECEIVE_SEEDS.update({
    "stripe-invoice-paid": receive_input("/hooks/stripe", STRIPE),
    "github-push": receive_input("/hooks/github", GITHUB_PUSH,
                                 event_id=b"72d3162e-cc78-11e3-81ab-4c9367dc0958",
                                 event_type=b"push"),
    "github-legacy-sha1": receive_input(
        "/hooks/github", GITHUB_PUSH, mode=UNSIGNED,
        headers=[("X-Hub-Signature",
                  "sha1=" + hmac_hex(receive_secret(ROW["github"]), GITHUB_PUSH, hashlib.sha1)),
                 ("X-GitHub-Event", "push")]),
    "standard-v1": receive_input("/hooks/standard", STANDARD,
                                 event_id=b"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"),
    "standard-v1a": receive_input(
        "/hooks/standard", STANDARD, mode=UNSIGNED,
        headers=[("webhook-id", STANDARD_ID), ("webhook-timestamp", TS),
                 ("webhook-signature",
                  "v1a," + base64.b64encode(ed25519(STANDARD_V1A_SIGNED)).decode())]),
    "standard-svix": receive_input(
        "/hooks/standard", STANDARD, mode=UNSIGNED,
        headers=[("svix-id", SVIX_ID), ("svix-timestamp", TS),
                 ("svix-signature", "v1," + hmac_b64(STANDARD_KEY, SVIX_SIGNED))]),
    "shopify-order": receive_input("/hooks/shopify", SHOPIFY,
                                   headers=[("X-Shopify-Webhook-Id",
                                             b"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"),
                                            ("Content-Type", b"application/json")],
                                   event_id=b"98880550-7158-44d4-b7cd-2c97c8a091b5",
                                   event_type=b"orders/create"),
    "slack-event": receive_input("/hooks/slack", SLACK_EVENT),
    "slack-challenge": receive_input("/hooks/slack", SLACK_CHALLENGE),
    "slack-command-form": receive_input(
        "/hooks/slack", SLACK_COMMAND,
        headers=[("Content-Type", b"application/x-www-form-urlencoded")]),
    "gitlab-push": receive_input("/hooks/gitlab", GITLAB,
                                 event_id=b"f1d51fcd-0b12-4bbd-a4c7-e0a2e3a4c1a0",
                                 event_type=b"Push Hook"),
    "paddle-transaction": receive_input("/hooks/paddle", PADDLE),
    "square-payment": receive_input("/hooks/square", SQUARE),
    "square-query": receive_input("/hooks/square", SQUARE, query=b"env=prod&token=abc"),
    "discord-event": receive_input("/hooks/discord", DISCORD_EVENT, mode=UNSIGNED,
                                   headers=discord_headers(DISCORD_EVENT)),
    "discord-ping": receive_input("/hooks/discord", DISCORD_PING, mode=UNSIGNED,
                                  headers=discord_headers(DISCORD_PING)),
    "discord-fields": receive_input(
        "/hooks/discord/fields", TABLE_JSON, mode=UNSIGNED,
        headers=discord_headers(TABLE_JSON) + [("X-Event-Id", "evt-discord"),
                                               ("X-Event-Type", "thing.created")]),
    "twilio-sms-form": receive_input(
        "/hooks/twilio", TWILIO_SMS,
        headers=[("Content-Type", b"application/x-www-form-urlencoded"),
                 ("I-Twilio-Idempotency-Token", b"8b0c9e1a-2c77-4d2b-9f3c-1e2f3a4b5c6d")]),
    "twilio-status-query": receive_input("/hooks/twilio", TWILIO_STATUS,
                                         query=b"account=main&x=1"),
    "twilio-json-bodysha256": receive_input(
        "/hooks/twilio", TWILIO_JSON, query=TWILIO_JSON_QUERY, mode=UNSIGNED,
        headers=[("X-Twilio-Signature",
                  hmac_b64(TWILIO_TOKEN, TWILIO_PUBLIC_URL.encode() + b"?" + TWILIO_JSON_QUERY,
                           hashlib.sha1))]),
    "twilio-sha256-settings": receive_input(
        "/hooks/twilio", TWILIO_STATUS, mode=UNSIGNED,
        headers=[("X-Twilio-Signature",
                  hmac_b64(TWILIO_TOKEN,
                           TWILIO_PUBLIC_URL.encode() + twilio_sorted(TWILIO_STATUS))),
                 ("X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256")]),
    "hmac-order": receive_input("/hooks/hmac/fields", HMAC_BODY,
                                headers=[("X-Event-Id", b"ord_42-1"),
                                         ("X-Event-Type", b"order.shipped")]),
    "open-unsigned": receive_input("/hooks/open", OPEN, mode=UNSIGNED),
    "stripe-unsigned": receive_input("/hooks/stripe", STRIPE, mode=UNSIGNED,
                                     headers=[("Stripe-Signature", b"t=1686089970,v1=00,v0=11")]),
    "any-path": receive_input("/hooks/nowhere", OPEN, mode=UNSIGNED),
    "github-get": receive_input("/hooks/github", GITHUB_PUSH, method="GET"),
})

# The GitHub event bodies of the old seeds (tests/fuzz/corpus/identify/gh-*), as signed
# deliveries with their event names.
for name in sorted(os.listdir(os.path.join(HERE, "corpus", "identify"))):
    if name.startswith("gh-") and name.endswith("-0"):
        event = name[3:-2].encode()
        with open(os.path.join(HERE, "corpus", "identify", name), "rb") as f:
            body = f.read()
        RECEIVE_SEEDS["github-signed-" + name[3:-2]] = receive_input(
            "/hooks/github", body, event_id=b"d0f1e2a3-" + event, event_type=event)


# ---- fuzz_verify seeds: the signatures its round trip through Sign() does not make

VERIFY_KEY = SIGNING_SECRET.encode()  # the HMAC rows' key as it is
STANDARD_VERIFY_KEY = base64.b64decode(SIGNING_SECRET[len("whsec_"):])
VERIFY_SIGNED = STANDARD_ID + b"." + TS.encode() + b"." + STANDARD
VERIFY_TWILIO_QUERY = (b"bodySHA256=" + hashlib.sha256(TWILIO_JSON).hexdigest().encode())

# Every row, with no headers: the harness's round trip through Sign() and Verify() (for the
# rows it signs for) from the first run.
VERIFY_SEEDS = {row["name"] + "-table-roundtrip": verify_input(row, [], table_body(row))
                for row in ROWS}
VERIFY_SEEDS.update({
    "discord-ed25519": verify_input(
        ROW["discord"], [("X-Signature-Ed25519", ed25519(TS.encode() + DISCORD_EVENT).hex()),
                         ("X-Signature-Timestamp", TS)], DISCORD_EVENT),
    "standard-v1a": verify_input(
        ROW["standard"], [("webhook-id", STANDARD_ID), ("webhook-timestamp", TS),
                          ("webhook-signature",
                           "v1a," + base64.b64encode(ed25519(VERIFY_SIGNED)).decode())],
        STANDARD),
    "standard-svix": verify_input(
        ROW["standard"], [("svix-id", STANDARD_ID), ("svix-timestamp", TS),
                          ("svix-signature",
                           "v1," + hmac_b64(STANDARD_VERIFY_KEY, VERIFY_SIGNED))],
        STANDARD),
    "github-legacy-sha1": verify_input(
        ROW["github"],
        [("X-Hub-Signature", "sha1=" + hmac_hex(VERIFY_KEY, GITHUB_PUSH, hashlib.sha1))],
        GITHUB_PUSH),
    "twilio-sha256-settings": verify_input(
        ROW["twilio"], [("X-Twilio-Signature",
                         hmac_b64(VERIFY_KEY, VERIFY_URLS[0].encode() +
                                  twilio_sorted(TWILIO_STATUS))),
                        ("X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256")],
        TWILIO_STATUS),
    "twilio-port-443": verify_input(
        ROW["twilio"], [("X-Twilio-Signature",
                         hmac_b64(VERIFY_KEY, b"https://h.example" + twilio_sorted(TWILIO_STATUS),
                                  hashlib.sha1))],
        TWILIO_STATUS, url=3),
    "twilio-json-bodysha256": verify_input(
        ROW["twilio"], [("X-Twilio-Signature",
                         hmac_b64(VERIFY_KEY, VERIFY_URLS[0].encode() + b"?" + VERIFY_TWILIO_QUERY,
                                  hashlib.sha1))],
        TWILIO_JSON, query=VERIFY_TWILIO_QUERY),
    "square-query": verify_input(
        ROW["square"], [("x-square-hmacsha256-signature",
                         hmac_b64(VERIFY_KEY, VERIFY_URLS[0].encode() + b"?env=prod" + SQUARE))],
        SQUARE, query=b"env=prod"),
    "hmac-sha512-base64": verify_input(
        ROW["hmac"], [("X-Signature", hmac_b64(VERIFY_KEY, HMAC_BODY, hashlib.sha512))],
        HMAC_BODY, algorithm="sha512", encoding="base64"),
})


# ---- raw HTTP requests for the http harness (fixed secrets and times: it only parses)

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
write("verify", VERIFY_SEEDS)
write("http", HTTP_SEEDS)
print(f"{len(RECEIVE_SEEDS)} receive seeds, {len(VERIFY_SEEDS)} verify seeds, "
      f"{len(HTTP_SEEDS)} http seeds")
