"""A delivery signed as GitHub signs it (X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the
body>) and its POST: bench/gen_deliveries.py's pre-generated lines, and the deliveries
bench/bulk.py and bench/accept_cost.py send themselves."""
import hashlib
import hmac


def signature(secret, body):
    """The X-Hub-Signature-256 value of body (bytes) under secret (str)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post_push(conn, delivery, sig, body, path="/hooks/github", event="push"):
    """POSTs one signed GitHub delivery (a push unless event says otherwise: the
    X-GitHub-Event routes pick by) on conn (an http.client connection, kept alive) and reads
    its answer; the answer's status."""
    conn.request("POST", path, body, {
        "Content-Type": "application/json", "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig})
    answer = conn.getresponse()
    answer.read()
    return answer.status
