"""Tests against a real `amnesia serve` (started by scripts/test-clients).

Every test uses fresh subject ids and keys, so the suite can run again on the
same server and state directory.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import queue
import sqlite3
import threading
import unittest
import uuid
from typing import Any, Dict, List, Tuple

import _harness as H
from amnesia_client import (
    AmnesiaError,
    Client,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    Record,
    Unauthorized,
    verify_webhook,
)
from amnesia_client.offline import BadSignature, CertificateInvalid, encode_bundle, load_public_key, verify_bundle

SKIP = H.missing()


def uniq() -> str:
    return uuid.uuid4().hex[:12]


def put_rows(rows: List[Tuple[str, ...]]) -> None:
    """Writes (id, kind, subject tag, parent, text) rows into the sqlite-doc store's file."""
    con = sqlite3.connect(H.DOCS_DB, timeout=10)
    try:
        with con:
            con.executemany(
                "INSERT INTO documents (id, kind, subject, parent, text) VALUES (?, ?, ?, ?, ?)", rows
            )
    finally:
        con.close()


def ids_present(ids: List[str]) -> List[str]:
    con = sqlite3.connect(H.DOCS_DB, timeout=10)
    try:
        q = "SELECT id FROM documents WHERE id IN (%s) ORDER BY id" % ",".join("?" * len(ids))
        return [r[0] for r in con.execute(q, ids)]
    finally:
        con.close()


def document(subject: str) -> Tuple[List[str], List[Tuple[str, ...]], List[Record]]:
    """A document with two chunks of one subject: its rows and its lineage."""
    u = uniq()
    doc, c1, c2 = f"doc-{u}", f"doc-{u}#0", f"doc-{u}#1"
    t1 = f"Meeting notes {u}: the customer asked about the renewal of contract {u} in March."
    t2 = f"Follow-up {u}: invoice {u[::-1]} was paid late; the account manager called twice."
    tag = f"user-{u}"
    rows: List[Tuple[str, ...]] = [(doc, "document", tag, "", t1 + " " + t2), (c1, "chunk", tag, doc, t1), (c2, "chunk", tag, doc, t2)]
    recs = [
        Record(H.DOCS_STORE, doc, "source", subject=subject, content=t1 + " " + t2),
        Record(H.DOCS_STORE, c1, "chunk", parent=(H.DOCS_STORE, doc), content=t1),
        Record(H.DOCS_STORE, c2, "chunk", parent=(H.DOCS_STORE, doc), content=t2),
    ]
    return [doc, c1, c2], rows, recs


def assert_no_subject(tc: unittest.TestCase, subject: str, *docs: Any) -> None:
    for d in docs:
        text = d if isinstance(d, (str, bytes)) else json.dumps(d, default=str)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        tc.assertNotIn(subject, text)


@unittest.skipIf(SKIP is not None, SKIP or "")
class Server(unittest.TestCase):
    capture: Client
    operator: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.capture = Client(H.URL, H.CAPTURE)
        cls.operator = Client(H.URL, H.OPERATOR)

    def test_health(self) -> None:
        self.assertTrue(self.capture.healthz())
        self.assertTrue(self.capture.readyz())

    def test_keys(self) -> None:
        keys = self.operator.keys()
        self.assertGreaterEqual(len(keys), 1)
        for k in keys:
            self.assertTrue(k.key_id)
            self.assertIn("BEGIN PUBLIC KEY", k.pem)

    def test_lineage_is_split_into_batches_and_idempotent(self) -> None:
        subject = f"batch-{uniq()}@example.com"
        root = f"big-{uniq()}"
        recs = [Record(H.DOCS_STORE, root, "source", subject=subject, content="root")]
        recs += [
            Record(H.DOCS_STORE, f"{root}#{i}", "chunk", parent=(H.DOCS_STORE, root), content=f"chunk {i}")
            for i in range(2099)
        ]
        res = self.capture.record_lineage(recs)
        self.assertEqual((res.recorded, res.unchanged, res.batches), (2100, 0, 3))
        again = self.capture.record_lineage(recs)
        self.assertEqual((again.recorded, again.unchanged, again.batches), (0, 2100, 3))
        tr = self.operator.trace(subject)
        self.assertEqual(tr.artifacts, 2100)
        self.assertEqual([(s.store, s.kinds, s.records) for s in tr.stores], [(H.DOCS_STORE, {"source": 1, "chunk": 2099}, 2100)])

    def test_trace_is_counts_only(self) -> None:
        subject = f"trace-{uniq()}@example.com"
        _, _, recs = document(subject)
        self.assertEqual(self.capture.record_lineage(recs).recorded, 3)
        tr = self.operator.trace(subject)
        self.assertTrue(tr.trace_id)
        self.assertTrue(tr.subject_ref)
        self.assertEqual((tr.artifacts, tr.mentions, tr.already_erased), (3, 0, 0))
        self.assertEqual(tr.stores[0].kinds, {"source": 1, "chunk": 2})
        assert_no_subject(self, subject, tr.raw)

    def test_unknown_subject_has_no_lineage(self) -> None:
        with self.assertRaises(NotFound) as cm:
            self.operator.trace(f"nobody-{uniq()}@example.com")
        self.assertEqual(cm.exception.status, 404)

    def test_roles_and_tokens(self) -> None:
        subject = f"roles-{uniq()}@example.com"
        with self.assertRaises(Forbidden) as cm:
            self.capture.trace(subject)
        assert_no_subject(self, subject, str(cm.exception))
        with self.assertRaises(Forbidden):
            self.capture.create_request(subject, "TICKET-1")
        with self.assertRaises(Unauthorized) as cm2:
            Client(H.URL, "amn_" + "A" * 43).trace(subject)
        self.assertEqual(cm2.exception.status, 401)
        assert_no_subject(self, subject, str(cm2.exception))
        noauth = Client(H.URL)
        req = noauth.build_request("POST", "/v1/trace", json_body={"subject": subject}, auth=False)
        with self.assertRaises(Unauthorized):
            noauth._send(req)

    def test_invalid_record_names_its_index_never_its_value(self) -> None:
        subject = f"invalid-{uniq()}@example.com"
        body = {
            "records": [
                {"store": H.DOCS_STORE, "key": f"ok-{uniq()}", "kind": "source", "subject": subject},
                {"store": H.DOCS_STORE, "key": f"bad-{uniq()}", "kind": "source"},
            ]
        }
        with self.assertRaises(InvalidInput) as cm:
            self.capture._json("POST", "/v1/lineage", body)
        e = cm.exception
        self.assertIn(e.status, (400, 422))
        self.assertIn("records[1]", str(e))
        assert_no_subject(self, subject, str(e), e.errors)
        with self.assertRaises(InvalidInput) as cm:
            self.capture._json("POST", "/v1/lineage", {"records": [{"store": H.DOCS_STORE, "key": "k-" + uniq(), "kind": "chunk", "parent": {"store": H.DOCS_STORE, "key": "never-recorded-" + uniq()}}]})
        self.assertIn("records[0]", str(cm.exception))

    def test_unknown_ids_are_not_found(self) -> None:
        with self.assertRaises(NotFound):
            self.operator.request("req_" + uniq())
        with self.assertRaises(NotFound):
            self.operator.certificate("cert-" + uniq())

    def test_erasure_through_the_api(self) -> None:
        subject = f"erase-{uniq()}@example.com"
        ids, rows, recs = document(subject)
        put_rows(rows)
        self.capture.record_lineage(recs)

        req = self.operator.create_request(subject, "TICKET-4711", external_ref="ext-" + uniq())
        self.assertTrue(req.id.startswith("req_"), req.id)
        self.assertEqual(req.state, "received")
        self.assertFalse(req.overdue)
        self.assertIsNotNone(req.due_at)
        assert_no_subject(self, subject, req.raw)

        pv = self.operator.preview(req.id)
        self.assertTrue(pv.confirmation.startswith("cnf_"), "confirmation prefix")
        self.assertEqual(pv.counts.artifacts, 3)
        self.assertIsNotNone(pv.expires_at)
        self.assertEqual(self.operator.request(req.id).state, "previewed")

        queued = self.operator.confirm(req.id, pv.confirmation)
        self.assertIn(queued.state, ("queued", "running", "done"))
        with self.assertRaises(Conflict):
            self.operator.confirm(req.id, pv.confirmation)

        done = self.operator.wait(req.id, timeout=120)
        self.assertEqual(done.state, "done", done.error)
        self.assertIs(done.complete, True)
        self.assertTrue(done.certificate_id)
        self.assertEqual(done.trace_id, pv.trace_id)
        self.assertEqual(ids_present(ids), [], "the subject's rows are gone from the store")

        bundle = self.operator.certificate(done.certificate_id)
        self.assertEqual(done.certificate_sha256, "sha256:" + hashlib.sha256(bundle).hexdigest())
        self.assertTrue(done.matches_certificate(bundle))
        self.assertFalse(done.matches_certificate(bundle + b" "))
        assert_no_subject(self, subject, bundle)
        v = self.operator.verify(bundle)
        self.assertTrue(v.valid, v.error)
        self.assertEqual(v.certificate_id, done.certificate_id)
        self.assertTrue(v.key_id)
        self.assertTrue(v.complete)

        doc = json.loads(bundle)
        tampered = json.dumps(_flip_signature(doc)).encode()
        bad = self.operator.verify(tampered)
        self.assertFalse(bad.valid)
        self.assertTrue(bad.error_kind)

        # The same verdicts offline, with the package alone and the published key.
        keys = [load_public_key(k.pem) for k in self.operator.keys()]
        checked = verify_bundle(bundle, keys)
        self.assertEqual(checked.certificate_id, done.certificate_id)
        self.assertEqual(checked.key_id, v.key_id)
        self.assertEqual(checked.log_index, v.log_index)
        self.assertTrue(checked.complete)
        with self.assertRaises(CertificateInvalid):
            verify_bundle(tampered, keys)
        with self.assertRaises(BadSignature):
            verify_bundle(encode_bundle(_flip_signature(json.loads(bundle))), keys)

        cp = self.operator.checkpoint()
        lines = cp.splitlines()
        self.assertGreaterEqual(len(lines), 3, "origin, size, root hash")
        self.assertTrue(lines[1].isdigit())
        self.assertGreaterEqual(int(lines[1]), v.log_index + 1)

        self.assertIn(v.key_id, [k.key_id for k in self.operator.keys()])
        self.assertIn(req.id, [r.id for r in self.operator.requests(state="done")])
        self.assertIn(req.id, [r.id for r in self.operator.requests(overdue=False)])
        self.assertNotIn(req.id, [r.id for r in self.operator.requests(overdue=True)])
        self.assertNotIn(req.id, [r.id for r in self.operator.requests(state="received")])

        # The queue lists the erasure as done, with its certificate's digest;
        # keyed references only; read by operator and auditor tokens alone.
        st = self.operator.queue_status(all=True, limit=1000)
        self.assertGreaterEqual(st.counts.get("done", 0), 1)
        mine = [j for j in st.history if done.erasure_id in (j.erasure, j.continued_as)]
        self.assertEqual(len(mine), 1, "the erasure is in the queue's history")
        self.assertEqual(mine[0].state, "done")
        self.assertEqual(mine[0].queue_state, "done")
        self.assertTrue(mine[0].certificate.startswith("sha256:"), mine[0].certificate)
        self.assertTrue(mine[0].subject_ref.startswith("hmac:"), mine[0].subject_ref)
        self.assertIsNotNone(mine[0].finished_at)
        assert_no_subject(self, subject, st.raw)
        audited = Client(H.URL, H.AUDITOR).queue_status(all=True, limit=1000)
        self.assertIn(mine[0].erasure, [j.erasure for j in audited.history])
        with self.assertRaises(Forbidden):
            self.capture.queue_status()
        with self.assertRaises(InvalidInput):
            self.operator.queue_status(limit=0)

        # Erased is erased: nothing is left to trace, and re-ingest is refused.
        with self.assertRaises(Conflict):
            self.operator.trace(subject)
        with self.assertRaises(Conflict):
            self.capture.record_lineage(recs[:1])

    def test_confirm_is_refused_when_the_trace_changed(self) -> None:
        subject = f"changed-{uniq()}@example.com"
        ids, rows, recs = document(subject)
        self.capture.record_lineage(recs)
        req = self.operator.create_request(subject, "TICKET-2")
        pv = self.operator.preview(req.id)
        self.capture.record_lineage([Record(H.DOCS_STORE, ids[0] + "#2", "chunk", parent=(H.DOCS_STORE, ids[0]), content="late chunk")])
        with self.assertRaises(Conflict):
            self.operator.confirm(req.id, pv.confirmation)
        self.assertEqual(self.operator.request(req.id).state, "previewed")

    def test_bad_confirmation_is_refused(self) -> None:
        subject = f"badcnf-{uniq()}@example.com"
        _, _, recs = document(subject)
        self.capture.record_lineage(recs)
        req = self.operator.create_request(subject, "TICKET-3")
        self.operator.preview(req.id)
        with self.assertRaises(AmnesiaError) as cm:
            self.operator.confirm(req.id, "cnf_" + "x" * 20)
        self.assertIn(cm.exception.status, (400, 403, 409, 422))
        self.assertNotEqual(self.operator.request(req.id).state, "queued")

    @unittest.skipUnless(H.AUDITOR, "AMNESIA_TOKEN_AUDITOR not set")
    def test_auditor_reads_but_does_not_erase(self) -> None:
        auditor = Client(H.URL, H.AUDITOR)
        self.assertIsInstance(auditor.requests(), list)
        self.assertTrue(auditor.checkpoint())
        with self.assertRaises(Forbidden):
            auditor.trace(f"aud-{uniq()}@example.com")
        with self.assertRaises(Forbidden):
            auditor.create_request(f"aud-{uniq()}@example.com", "TICKET-5")

    @unittest.skipUnless(H.WEBHOOK_SECRET, "AMNESIA_WEBHOOK_SECRET not set")
    def test_webhook_intake(self) -> None:
        subject = f"intake-{uniq()}@example.com"
        ext = "dg-" + uniq()
        payload = {"request_id": ext, "identity": {"type": "email", "value": subject}, "reason": "privacy request"}
        rid = Client(H.URL).intake_webhook(H.WEBHOOK_SECRET, payload)
        self.assertTrue(rid.startswith("req_"), rid)
        got = self.operator.request(rid)
        self.assertEqual(got.external_ref, ext)
        self.assertEqual(got.state, "received")
        assert_no_subject(self, subject, got.raw)
        with self.assertRaises(Unauthorized):
            Client(H.URL).intake_webhook("not-the-secret", payload)
        with self.assertRaises(Unauthorized):
            Client(H.URL).intake_webhook(H.WEBHOOK_SECRET, payload, timestamp=1)


class _Callbacks(http.server.BaseHTTPRequestHandler):
    """Receives amnesia's signed callbacks (a real loopback HTTP server)."""

    got: "queue.Queue[Tuple[Dict[str, str], bytes]]" = queue.Queue()

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.got.put(({k: v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@unittest.skipIf(SKIP is not None, SKIP or "")
@unittest.skipUnless(H.WEBHOOK_SECRET, "AMNESIA_WEBHOOK_SECRET not set")
class Callback(unittest.TestCase):
    def test_the_callback_is_signed_and_names_the_certificate(self) -> None:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Callbacks)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        capture, op = Client(H.URL, H.CAPTURE), Client(H.URL, H.OPERATOR)
        subject = f"callback-{uniq()}@example.com"
        ids, rows, recs = document(subject)
        put_rows(rows)
        capture.record_lineage(recs)
        ext = "ticket-" + uniq()
        url = f"http://127.0.0.1:{srv.server_address[1]}/amnesia-callback"
        req = op.create_request(subject, "TICKET-77", external_ref=ext, callback_url=url)
        self.assertTrue(req.raw.get("has_callback"))
        op.confirm(req.id, op.preview(req.id).confirmation)
        done = op.wait(req.id, timeout=120)
        self.assertEqual(done.state, "done", done.error)
        headers, body = _Callbacks.got.get(timeout=60)
        self.assertTrue(verify_webhook(H.WEBHOOK_SECRET, body, headers), "the callback's signature checks")
        self.assertFalse(verify_webhook("another-secret", body, headers))
        doc = json.loads(body)
        self.assertEqual(doc["request_id"], ext)
        self.assertEqual(doc["status"], "completed")
        self.assertEqual(doc["certificate_sha256"], done.certificate_sha256)
        self.assertIs(doc.get("complete"), True)
        assert_no_subject(self, subject, body, headers)


def _flip_signature(doc: Any) -> Any:
    """A copy of a bundle with one signature byte changed (base64 letter swapped)."""
    s = json.dumps(doc)
    d = json.loads(s)

    def walk(o: Any) -> bool:
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("sig", "signature") and isinstance(v, str) and len(v) > 8:
                    o[k] = ("B" if v[4] != "B" else "C").join([v[:4], v[5:]])
                    return True
                if walk(v):
                    return True
        elif isinstance(o, list):
            return any(walk(x) for x in o)
        return False

    if not walk(d):
        raise AssertionError("no signature found in the bundle")
    return d


if __name__ == "__main__":
    unittest.main()
