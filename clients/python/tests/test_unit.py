"""Tests of the parts that need no server: request building, batching,
error mapping and webhook signatures."""

from __future__ import annotations

import hashlib
import json
import unittest
from typing import Dict, Optional

import _harness  # noqa: F401  (puts the package on sys.path)
from amnesia_client import (
    AmnesiaError,
    Client,
    Conflict,
    ConnectionFailed,
    Expired,
    Forbidden,
    InvalidInput,
    NotFound,
    RateLimited,
    Record,
    Ref,
    ServerError,
    Unauthorized,
    batches,
    error_from_response,
    sign_webhook,
    signature,
    verify_webhook,
)
from amnesia_client.types import QueueStatus, Request, parse_time

SUBJECT = "alice@example.com"


class RequestBuilding(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client("http://127.0.0.1:7468/", "amn_secret")

    def test_subject_travels_in_the_body_never_the_url(self) -> None:
        req = self.c.build_request("POST", "/v1/trace", json_body={"subject": SUBJECT})
        self.assertEqual(req.full_url, "http://127.0.0.1:7468/v1/trace")
        self.assertEqual(req.get_method(), "POST")
        assert isinstance(req.data, bytes)
        self.assertEqual(json.loads(req.data), {"subject": SUBJECT})
        self.assertEqual(req.get_header("Content-type"), "application/json")
        self.assertEqual(req.get_header("Authorization"), "Bearer amn_secret")

    def test_query_leaves_out_none_and_writes_booleans(self) -> None:
        self.assertEqual(
            self.c.url("/v1/requests", {"state": None, "overdue": True}), "http://127.0.0.1:7468/v1/requests?overdue=true"
        )
        self.assertEqual(self.c.url("/v1/requests", {"state": "done"}), "http://127.0.0.1:7468/v1/requests?state=done")

    def test_no_token_is_a_clear_error_and_public_calls_need_none(self) -> None:
        with self.assertRaisesRegex(ValueError, "needs a token"):
            Client("http://127.0.0.1:1").build_request("GET", "/v1/keys")
        req = Client("http://127.0.0.1:1").build_request("GET", "/healthz", auth=False)
        self.assertIsNone(req.get_header("Authorization"))

    def test_bad_base_url_is_refused(self) -> None:
        for u in ("127.0.0.1:7468", "ftp://h", "http://h/?x=1"):
            with self.assertRaises(ValueError, msg=u):
                Client(u)

    def test_unreachable_server_is_connection_failed(self) -> None:
        import socket

        with socket.socket() as sock:  # a loopback port nobody listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        with self.assertRaises(ConnectionFailed) as cm:
            Client(f"http://127.0.0.1:{port}", "amn_secret", timeout=5).trace(SUBJECT)
        self.assertEqual(cm.exception.status, 0)
        self.assertNotIn(SUBJECT, str(cm.exception))
        self.assertNotIn("amn_secret", str(cm.exception))

    def test_repr_hides_the_token(self) -> None:
        self.assertNotIn("amn_secret", repr(self.c))

    def test_ids_are_one_path_segment(self) -> None:
        req = self.c.build_request("GET", "/v1/requests/" + "req_1%2F..%2Fx")
        self.assertTrue(req.full_url.endswith("/v1/requests/req_1%2F..%2Fx"))
        from amnesia_client.client import _seg

        self.assertEqual(_seg("a/../b"), "a%2F..%2Fb")

    def test_nan_is_refused_before_sending(self) -> None:
        with self.assertRaises(ValueError):
            self.c.build_request("POST", "/v1/lineage", json_body={"v": float("nan")})


class QueueStatusParsing(unittest.TestCase):
    def test_status_report_with_nulls_and_nanoseconds(self) -> None:
        job = {"erasure": "er-1", "trace": "t1", "subject_ref": "hmac:ab", "scope": "default", "state": "waiting",
               "queue_state": "pending", "due_at": "2026-12-02T03:58:15.123456789Z", "due_in_s": -60, "overdue": True,
               "enqueued_at": "2026-12-02T01:58:15Z", "attempts": 0, "worker": "", "lease_until": None,
               "finished_at": None, "certificate": "", "error": "", "followed_by": "", "continued_as": ""}
        s = QueueStatus.from_json({"now": "2026-12-02T04:00:00Z", "attention": True, "limit": 100,
                                   "counts": {"waiting": 1, "overdue": 1}, "open": [job],
                                   "delete_persistence_latency": [{"store": "docs", "state": "found", "latency_ms": None}]})
        self.assertTrue(s.attention)
        self.assertEqual(s.counts["overdue"], 1)
        self.assertEqual(s.history, [], "no history without all=True")
        j = s.open[0]
        self.assertEqual((j.erasure, j.state, j.overdue, j.due_in_s), ("er-1", "waiting", True, -60.0))
        self.assertEqual(j.due_at, parse_time("2026-12-02T03:58:15.123456Z"))
        self.assertIsNone(j.lease_until)
        self.assertEqual(s.latency[0]["state"], "found")

    def test_status_query(self) -> None:
        c = Client("http://127.0.0.1:1", "amn_test")
        self.assertEqual(c.url("/v1/status", {"limit": 5, "all": True}), "http://127.0.0.1:1/v1/status?limit=5&all=true")


class Records(unittest.TestCase):
    def test_record_json(self) -> None:
        r = Record("vectors", "c1", "embedding", parent=("docs", "c1"), vector=[0.5, 1], mentions=["bob"])
        self.assertEqual(
            r.to_json(),
            {
                "store": "vectors",
                "key": "c1",
                "kind": "embedding",
                "parent": {"store": "docs", "key": "c1"},
                "vector": [0.5, 1.0],
                "mentions": ["bob"],
            },
        )
        self.assertEqual(Record("d", "k", "chunk", parent=Ref("d", "p")).to_json()["parent"], {"store": "d", "key": "p"})
        self.assertEqual(
            Record.from_mapping({"store": "d", "key": "k", "kind": "source", "subject": SUBJECT, "content": ""}).to_json(),
            {"store": "d", "key": "k", "kind": "source", "subject": SUBJECT, "content": ""},
        )

    def test_validation_names_the_index_never_the_value(self) -> None:
        bad = [
            Record("d", "k", "source", subject=SUBJECT),
            Record("d", "k2", "document", subject=SUBJECT),
        ]
        with self.assertRaises(ValueError) as cm:
            list(batches(bad))
        self.assertIn("records[1].kind", str(cm.exception))
        self.assertNotIn(SUBJECT, str(cm.exception))
        with self.assertRaisesRegex(ValueError, r"records\[0\].subject"):
            list(batches([Record("d", "k", "source")]))
        with self.assertRaisesRegex(ValueError, r"records\[0\].vector"):
            list(batches([Record("d", "k", "embedding", subject="s", vector=[1.0, float("inf")])]))
        with self.assertRaisesRegex(ValueError, "unknown field"):
            list(batches([{"store": "d", "key": "k", "kind": "source", "subject": "s", "text": "x"}]))

    def test_batches_split_at_1000(self) -> None:
        recs = [Record("d", f"k{i}", "source", subject="s") for i in range(2345)]
        got = list(batches(recs))
        self.assertEqual([(s, len(b)) for s, b in got], [(0, 1000), (1000, 1000), (2000, 345)])
        self.assertEqual(list(batches([])), [])
        self.assertEqual([(s, len(b)) for s, b in batches(recs[:5], 2)], [(0, 2), (2, 2), (4, 1)])
        with self.assertRaises(ValueError):
            list(batches(recs, 1001))

    def test_batches_stay_under_the_body_limit(self) -> None:
        # 1000 embeddings of 1536 dimensions are ~30 MB of JSON: far over 1 MiB.
        vec = [0.123456789] * 1536
        recs = [Record("v", f"k{i}", "embedding", parent=("d", f"k{i}"), vector=vec) for i in range(100)]
        got = list(batches(recs, max_bytes=1 << 20))
        self.assertGreater(len(got), 1)
        self.assertEqual(sum(len(b) for _, b in got), 100)
        self.assertEqual([s for s, _ in got], [sum(len(b) for _, b in got[:j]) for j in range(len(got))])
        for _, b in got:
            body = json.dumps({"scope": "default", "records": [r.to_json() for r in b]}, separators=(",", ":")).encode()
            self.assertLessEqual(len(body), 1 << 20)
        with self.assertRaisesRegex(ValueError, r"records\[0\]: .* over the request body limit"):
            list(batches(recs[:1], max_bytes=1000))


class ErrorMapping(unittest.TestCase):
    def problem(self, status: int, doc: object, headers: Optional[Dict[str, str]] = None) -> AmnesiaError:
        return error_from_response(
            status, headers or {"Content-Type": "application/problem+json"}, json.dumps(doc).encode()
        )

    def test_status_maps_to_class_with_rfc9457_members(self) -> None:
        cases = {
            400: InvalidInput,
            401: Unauthorized,
            403: Forbidden,
            404: NotFound,
            409: Conflict,
            410: Expired,
            422: InvalidInput,
            429: RateLimited,
            500: ServerError,
            503: ServerError,
        }
        for status, cls in cases.items():
            e = self.problem(status, {"type": "https://amnesia.dev/problems/x", "title": "T", "status": status, "detail": "D"})
            self.assertIsInstance(e, cls, status)
            self.assertIsInstance(e, AmnesiaError)
            self.assertEqual((e.status, e.title, e.type, e.detail), (status, "T", "https://amnesia.dev/problems/x", "D"))
        self.assertIs(type(self.problem(418, {"title": "teapot"})), AmnesiaError)

    def test_field_errors_keep_location_and_drop_the_value(self) -> None:
        e = self.problem(
            422,
            {
                "title": "Unprocessable Entity",
                "status": 422,
                "detail": "validation failed",
                "errors": [{"location": "body.records[3].kind", "message": "unknown kind", "value": SUBJECT}],
            },
        )
        self.assertEqual(e.errors, [{"location": "body.records[3].kind", "message": "unknown kind"}])
        self.assertIn("body.records[3].kind: unknown kind", str(e))
        self.assertNotIn(SUBJECT, str(e))
        self.assertNotIn(SUBJECT, repr(e.args))

    def test_missing_or_foreign_bodies(self) -> None:
        e = error_from_response(404, {}, b"")
        self.assertEqual((e.status, e.title, e.type), (404, "Not Found", "about:blank"))
        e = error_from_response(502, {"content-type": "text/html"}, b"<html>bad gateway</html>" + b"x" * 1000)
        self.assertIsInstance(e, ServerError)
        self.assertLessEqual(len(e.title), 300)
        e = error_from_response(500, {}, b'["not", "an", "object"]')
        self.assertEqual(e.title, "Internal Server Error")

    def test_retry_after(self) -> None:
        e = self.problem(429, {"title": "Too Many Requests"}, {"retry-after": "2"})
        assert isinstance(e, RateLimited)
        self.assertEqual(e.retry_after, 2.0)
        e = self.problem(429, {"title": "Too Many Requests"}, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
        assert isinstance(e, RateLimited)
        self.assertIsNone(e.retry_after)

    def test_batch_start_is_in_the_message(self) -> None:
        e = self.problem(400, {"title": "Bad Request"})
        e.batch_start = 2000
        self.assertIn("record 2000", str(e))


class Webhooks(unittest.TestCase):
    # openssl: printf '%s' '1700000000:{"request_id":"r-1"}' | openssl dgst -sha256 -hmac whsec-test -binary | base64
    VECTOR = "v1=FVl0sFm9J+HDF7NR8DeZYiE51dy87z+tNeSQNOhul64="
    BODY = b'{"request_id":"r-1"}'

    def test_signature_matches_openssl(self) -> None:
        self.assertEqual(signature("whsec-test", 1700000000, self.BODY), self.VECTOR)
        self.assertEqual(signature(b"whsec-test", 1700000000, self.BODY), self.VECTOR)
        self.assertEqual(
            sign_webhook("whsec-test", self.BODY, 1700000000),
            {"X-Webhook-Timestamp": "1700000000", "X-Webhook-Signature": self.VECTOR},
        )

    def test_verify(self) -> None:
        h = {"x-webhook-timestamp": "1700000000", "x-webhook-signature": self.VECTOR}
        self.assertTrue(verify_webhook("whsec-test", self.BODY, h, now=1700000100))
        self.assertTrue(verify_webhook("whsec-test", self.BODY, {**h, "x-webhook-signature": "v1=AAAA, " + self.VECTOR}, now=1700000000))
        self.assertFalse(verify_webhook("whsec-test", self.BODY, h, now=1700000301), "outside ±5 min")
        self.assertFalse(verify_webhook("whsec-test", self.BODY, h, now=1699999699), "outside ±5 min")
        self.assertFalse(verify_webhook("other", self.BODY, h, now=1700000000))
        self.assertFalse(verify_webhook("whsec-test", self.BODY + b" ", h, now=1700000000))
        self.assertFalse(verify_webhook("whsec-test", self.BODY, {"x-webhook-signature": self.VECTOR}, now=1700000000))
        with self.assertRaisesRegex(ValueError, "empty"):
            signature("", 1, b"")


class Parsing(unittest.TestCase):
    def test_go_times_and_request(self) -> None:
        t = parse_time("2026-12-01T13:25:50.123456789Z")
        assert t is not None and t.utcoffset() is not None
        self.assertEqual((t.year, t.microsecond, t.utcoffset().total_seconds()), (2026, 123456, 0))  # type: ignore[union-attr]
        self.assertIsNone(parse_time("0001-01-01T00:00:00Z"))
        r = Request.from_json({"id": "req_1", "state": "done", "complete": True, "due_at": "2026-12-31T00:00:00+01:00"})
        self.assertTrue(r.finished)
        self.assertIs(r.complete, True)
        assert r.due_at is not None
        self.assertEqual(str(r.due_at.utcoffset()), "1:00:00")

    def test_certificate_digest(self) -> None:
        b = b'{"payload":"x"}'
        h = hashlib.sha256(b).hexdigest()
        for v in ("sha256:" + h, h, h.upper()):
            self.assertTrue(Request.from_json({"id": "r", "certificate_sha256": v}).matches_certificate(b), v)
        self.assertFalse(Request.from_json({"id": "r", "certificate_sha256": "sha256:" + h}).matches_certificate(b + b"\n"))
        self.assertFalse(Request.from_json({"id": "r"}).matches_certificate(b))


if __name__ == "__main__":
    unittest.main()
