"""Offline verification (amnesia_client.offline) against the Go verifier.

Every case is a file: the golden bundle of certificate/testdata, or a copy of
it changed in one place (some re-signed with the golden key, whose seed is the
32 bytes 0x00..0x1f, so that a schema error sits behind a valid signature).
The Python verifier must give the verdict ``amnesia verify --public-key``
gives: the same exit code (0: valid). The Go side runs when AMNESIA_BIN names
an amnesia binary (scripts/test-clients sets it); without it only the Python
verdicts, which the Go verifier gave when this test was written, are checked.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import subprocess
import tempfile
import unittest
from typing import Any, Callable, Dict, List, Tuple

import _harness  # noqa: F401  (sys.path)
from amnesia_client import _ed25519 as E
from amnesia_client.offline import (
    CertificateInvalid,
    load_public_key,
    verify_bundle,
    verify_envelope,
    encode_bundle,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TESTDATA = os.path.join(ROOT, "certificate", "testdata")
BIN = os.environ.get("AMNESIA_BIN", "")


def _sign(seed: bytes, msg: bytes) -> bytes:
    """RFC 8032 signing, for the tests only (the package only verifies)."""
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    pub = E._encode(E._mul(a, E._G))
    r = int.from_bytes(hashlib.sha512(h[32:] + msg).digest(), "little") % E._L
    R = E._encode(E._mul(r, E._G))
    k = int.from_bytes(hashlib.sha512(R + pub + msg).digest(), "little") % E._L
    return R + ((r + k * a) % E._L).to_bytes(32, "little")


GOLDEN_SEED = bytes(range(32))


def pem_of(pub: bytes) -> str:
    der = bytes.fromhex("302a300506032b6570032100") + pub
    return "-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(der).decode() + "\n-----END PUBLIC KEY-----\n"


def encode(b: Dict[str, Any]) -> bytes:
    return encode_bundle(b)


def resign(b: Dict[str, Any], change: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    st = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    change(st)
    payload = json.dumps(st, separators=(",", ":"), ensure_ascii=False).encode()
    pae = b"DSSEv1 28 application/vnd.in-toto+json %d %s" % (len(payload), payload)
    b["dsseEnvelope"]["payload"] = base64.b64encode(payload).decode()
    b["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(_sign(GOLDEN_SEED, pae)).decode()
    return b


def resign_raw(b: Dict[str, Any], change: Callable[[bytes], bytes]) -> Dict[str, Any]:
    """Re-sign after editing the payload's bytes (for what a dict cannot hold)."""
    st = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    payload = change(json.dumps(st, separators=(",", ":"), ensure_ascii=False).encode())
    pae = b"DSSEv1 28 application/vnd.in-toto+json %d %s" % (len(payload), payload)
    b["dsseEnvelope"]["payload"] = base64.b64encode(payload).decode()
    b["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(_sign(GOLDEN_SEED, pae)).decode()
    return b


def flip_b64(s: str, at: int = 10) -> str:
    c = "A" if s[at] != "A" else "B"
    return s[:at] + c + s[at + 1:]


def cases(raw: bytes) -> List[Tuple[str, bytes, int]]:
    """(name, file bytes, expected exit code of amnesia verify)."""
    g = json.loads(raw)
    out: List[Tuple[str, bytes, int]] = [("golden", raw, 0)]

    def case(name: str, code: int, f: Callable[[Dict[str, Any]], Any]) -> None:
        b = copy.deepcopy(g)
        r = f(b)
        out.append((name, r if isinstance(r, bytes) else encode(b), code))

    case("payload byte changed", 11, lambda b: b["dsseEnvelope"].__setitem__("payload", flip_b64(b["dsseEnvelope"]["payload"], 40)))
    case("signature changed", 11, lambda b: b["dsseEnvelope"]["signatures"][0].__setitem__("sig", flip_b64(b["dsseEnvelope"]["signatures"][0]["sig"], 5)))
    case("key id changed", 12, lambda b: b["dsseEnvelope"]["signatures"][0].__setitem__("keyid", "sha256:" + "0" * 64))
    case("log index changed", 13, lambda b: b["logEntry"].__setitem__("logIndex", 4))
    case("proof hash changed", 13, lambda b: b["logEntry"]["inclusionProof"].__setitem__(0, flip_b64(b["logEntry"]["inclusionProof"][0], 3)))
    case("proof hash dropped", 13, lambda b: b["logEntry"]["inclusionProof"].pop())
    case("checkpoint root changed", 14, lambda b: b["logEntry"].__setitem__("checkpoint", b["logEntry"]["checkpoint"].replace("\n1", "\n2", 1)))
    case("checkpoint signature changed", 14, lambda b: b["logEntry"].__setitem__("checkpoint", b["logEntry"]["checkpoint"][:-10] + ("A" if b["logEntry"]["checkpoint"][-10] != "A" else "B") + b["logEntry"]["checkpoint"][-9:]))
    case("checkpoint unsigned", 14, lambda b: b["logEntry"].__setitem__("checkpoint", b["logEntry"]["checkpoint"].split("\n\n")[0] + "\n\n"))
    case("whitespace added", 10, lambda b: encode(b).replace(b'"logEntry": {', b'"logEntry":  {'))
    case("log index a boolean", 10, lambda b: b["logEntry"].__setitem__("logIndex", True))
    case("log index a float", 10, lambda b: b["logEntry"].__setitem__("logIndex", 5.0))
    case("unknown member", 10, lambda b: b.__setitem__("extra", 1))
    case("second signature", 10, lambda b: b["dsseEnvelope"]["signatures"].append(dict(b["dsseEnvelope"]["signatures"][0])))
    case("media type changed", 10, lambda b: b.__setitem__("mediaType", "application/json"))
    case("bare envelope", 13, lambda b: encode(b["dsseEnvelope"]))
    case("not JSON", 10, lambda b: b"not json\n")
    case("timestamp not base64", 15, lambda b: b["logEntry"].__setitem__("timestamp", "***"))
    # Re-signed with the golden key: the signature verifies, the rest must not.
    case("re-signed, counts wrong", 10, lambda b: resign(b, lambda st: st["predicate"]["counts"].__setitem__("verified", 3)))
    case("re-signed, unknown outcome", 10, lambda b: resign(b, lambda st: st["predicate"]["artifacts"][0].__setitem__("outcome", "GONE")))
    case("re-signed, subject name", 10, lambda b: resign(b, lambda st: st["subject"][0].__setitem__("name", "x")))
    case("re-signed, times reversed", 10, lambda b: resign(b, lambda st: st["predicate"].__setitem__("valid_until", "2020-01-01T00:00:00Z")))
    case("re-signed, out_of_scope empty", 10, lambda b: resign(b, lambda st: st["predicate"].__setitem__("out_of_scope", [])))
    case("re-signed, NEEDS_HUMAN without reason", 10, lambda b: resign(b, lambda st: st["predicate"]["artifacts"][2].pop("reason")))
    case("re-signed, via unknown", 10, lambda b: resign(b, lambda st: st["predicate"]["artifacts"][0].__setitem__("via", "guess")))
    case("re-signed, crypto_shredding without evidence", 10, lambda b: resign(b, lambda st: st["predicate"].__setitem__("crypto_shredding", {"key_destroyed": True, "level": "physical", "evidence": "", "sealed_artifacts": 1, "covers": "c", "does_not_cover": "d"})))
    case("re-signed, crypto_shredding physical, key kept", 10, lambda b: resign(b, lambda st: st["predicate"].__setitem__("crypto_shredding", {"key_destroyed": False, "level": "physical", "evidence": "e", "sealed_artifacts": 1, "covers": "c", "does_not_cover": "d"})))
    def near(outcome: str = "NEEDS_HUMAN", deleted: bool = False, sim: Any = 0.5, method: str = "quote") -> Callable[[Dict[str, Any]], None]:
        def f(st: Dict[str, Any]) -> None:
            a = {"id": "art:" + "0" * 20, "kind": "near-duplicate", "store": "docs", "outcome": outcome,
                 "reason": "a person must decide", "method": "not deleted: near-duplicate candidate",
                 "measurement": {"deleted": deleted, "near": {"method": method, "of": "art:" + "1" * 20, "similarity": sim}}}
            if outcome == "VERIFIED":
                a["level"] = "logical"
            p = st["predicate"]
            p["artifacts"].append(a)
            c = p["counts"]
            c["artifacts"] += 1
            if outcome == "VERIFIED":
                c["verified"] += 1
                c["verified_logical"] += 1
            else:
                c["needs_human"] += 1
        return f

    def semantic(level: str = "semantic", overlap: Any = 0.9, least: Any = 0.5, unerased: Any = 1.0) -> Callable[[Dict[str, Any]], None]:
        def f(st: Dict[str, Any]) -> None:
            st["predicate"]["semantic"] = {"level": level, "note": "a measurement", "searches": [
                {"store": "docs", "methods": ["quote"], "records": 0, "candidates": 0}],
                "drift": [{"store": "docs", "queries": 4, "k": 10, "overlap_at_k": overlap, "min_overlap_at_k": least,
                           "erased_neighbours": 1, "overlap_unerased_at_k": unerased, "method": "m"}]}
        return f

    case("re-signed, near-duplicate VERIFIED", 10, lambda b: resign(b, near(outcome="VERIFIED")))
    case("re-signed, near-duplicate deleted", 10, lambda b: resign(b, near(deleted=True)))
    case("re-signed, near similarity over 1", 10, lambda b: resign(b, near(sim=1.5)))
    case("re-signed, near method unknown", 10, lambda b: resign(b, near(method="guess")))
    case("re-signed, near-duplicate valid (not in the log)", 13, lambda b: resign(b, near()))
    case("re-signed, semantic level", 10, lambda b: resign(b, semantic(level="physical")))
    case("re-signed, drift overlap over 1", 10, lambda b: resign(b, semantic(overlap=1.2)))
    case("re-signed, drift least over mean", 10, lambda b: resign(b, semantic(least=0.95)))
    case("re-signed, drift unerased overlap negative", 10, lambda b: resign(b, semantic(unerased=-0.5)))
    case("re-signed, semantic valid (not in the log)", 13, lambda b: resign(b, semantic()))
    case("re-signed, complete flipped", 13, lambda b: resign(b, lambda st: st["predicate"].__setitem__("complete", True)))

    def art(i: int, f: Callable[[Dict[str, Any]], Any]) -> Callable[[Dict[str, Any]], None]:
        return lambda st: f(st["predicate"]["artifacts"][i])

    def complete_with(outcome: str) -> Callable[[Dict[str, Any]], None]:
        def f(st: Dict[str, Any]) -> None:
            p = st["predicate"]
            p["artifacts"][2]["outcome"] = outcome
            p["counts"]["needs_human"] -= 1
            p["counts"][outcome.lower()] += 1
            p["complete"] = True
        return f

    # A VERIFIED artifact whose own measurement contradicts it, and a
    # complete certificate with an artifact that was not verified.
    case("re-signed, VERIFIED but found after", 10, lambda b: resign(b, art(0, lambda a: a["measurement"]["physical"].__setitem__("found_after", 1))))
    case("re-signed, VERIFIED but returned by id", 10, lambda b: resign(b, art(1, lambda a: a["measurement"]["logical"].__setitem__("by_id", True))))
    case("re-signed, physical without power", 10, lambda b: resign(b, art(0, lambda a: a["measurement"]["physical"].__setitem__("found_before", 0))))
    case("re-signed, physical without measurement", 10, lambda b: resign(b, art(0, lambda a: a["measurement"].pop("physical"))))
    case("re-signed, complete with a RESIDUAL", 10, lambda b: resign(b, complete_with("RESIDUAL")))
    case("re-signed, complete with an OUT_OF_SCOPE", 10, lambda b: resign(b, complete_with("OUT_OF_SCOPE")))
    # Keys another JSON reader could read differently.
    case("re-signed, complete repeated", 10, lambda b: resign_raw(b, lambda p: p.replace(b'"complete":false', b'"complete":false,"complete":true', 1)))
    case("re-signed, complete in capitals", 10, lambda b: resign_raw(b, lambda p: p.replace(b'"complete":false', b'"complete":false,"Complete":true', 1)))
    case("re-signed, outcome key in capitals", 10, lambda b: resign_raw(b, lambda p: p.replace(b'"outcome":"NEEDS_HUMAN"', b'"OUTCOME":"NEEDS_HUMAN"', 1)))

    # The rules added for parity with certificate.Verify: each has a case
    # refused (10) and a case accepted (13: valid, but the re-signed payload
    # is not the logged one).
    def signed(change: Callable[[Dict[str, Any]], Any]) -> Callable[[Dict[str, Any]], Any]:
        return lambda b: resign(b, change)

    def raw_edit(old: bytes, new: bytes) -> Callable[[Dict[str, Any]], Any]:
        def f(b: Dict[str, Any]) -> Any:
            def edit(p: bytes) -> bytes:
                assert old in p, old
                return p.replace(old, new, 1)
            return resign_raw(b, edit)
        return f

    def pred(key: str, value: Any) -> Callable[[Dict[str, Any]], Any]:
        return signed(lambda st: st["predicate"].__setitem__(key, value))

    # Models (certificate/model.go checkModels).
    def model(outcome: str = "VERIFIED", level: str = "model", reason: str = "", switched: bool = True,
              complete: bool = False) -> Callable[[Dict[str, Any]], Any]:
        def f(st: Dict[str, Any]) -> None:
            m: Dict[str, Any] = {
                "model": "ranker", "sharded": True, "level": level, "outcome": outcome, "method": "retrain the shards",
                "shards": [{"shard": 0, "tainted": [{"run": "r1", "sha256": "a" * 64, "rows": 10, "subject_rows": 2}],
                            "retrain": "done", "retrained": {"run": "r2", "sha256": "b" * 64, "rows": 8, "subject_rows": 0},
                            "trained_without": True, "served": "switched" if switched else "operator-must-switch",
                            "tainted_files_left": 0}]}
            if reason:
                m["reason"] = reason
            st["predicate"]["models"] = [m]
            if complete:
                st["predicate"]["complete"] = True
        return signed(f)

    case("re-signed, model VERIFIED (not in the log)", 13, model())
    case("re-signed, model VERIFIED next to complete (not in the log)", 13, model(complete=True))
    case("re-signed, model VERIFIED but not switched in", 10, model(switched=False))
    case("re-signed, model TAINTED with a reason (not in the log)", 13, model("TAINTED", reason="trained without shards"))
    case("re-signed, model TAINTED next to complete", 10, model("TAINTED", reason="trained without shards", complete=True))
    case("re-signed, model TAINTED without a reason", 10, model("TAINTED"))
    case("re-signed, model at level logical", 10, model(level="logical"))
    case("re-signed, model OUT_OF_SCOPE (not a model outcome)", 10, model("OUT_OF_SCOPE", reason="not traced"))

    # Declared stores next to complete (certificate/check.go checkDeclaredScope).
    def unreachable(what: str = "", complete: bool = True) -> Callable[[Dict[str, Any]], Any]:
        def f(st: Dict[str, Any]) -> None:
            p = st["predicate"]
            p["declared_scope"].append({"name": "archive", "type": "sqlite-doc", "capabilities": [], "touched": False,
                                        "artifacts": 0, "residue": "UNREACHABLE",
                                        "evidence": "the store could not be opened or reached when the erasure ran, so nothing about it was checked"})
            if what:
                p["out_of_scope"].append({"what": what, "reason": "configured, but it could not be opened or reached when the erasure ran"})
            p["complete"] = complete
        return signed(f)

    def residue(i: int, state: str, complete: bool = True) -> Callable[[Dict[str, Any]], Any]:
        def f(st: Dict[str, Any]) -> None:
            st["predicate"]["declared_scope"][i]["residue"] = state
            st["predicate"]["complete"] = complete
        return signed(f)

    case("re-signed, complete, an unreachable store out_of_scope does not name", 10, unreachable())
    case("re-signed, complete, an unreachable store whose files only are excluded", 10, unreachable("files of store archive"))
    case("re-signed, complete, an unreachable store declared out of scope (not in the log)", 13, unreachable("store archive (unreachable)"))
    case("re-signed, complete, an unreachable store excluded as a store (not in the log)", 13, unreachable("store archive"))
    case("re-signed, incomplete, an unreachable store not excluded (not in the log)", 13, unreachable(complete=False))
    case("re-signed, complete, a failed store", 10, residue(1, "UNVERIFIED-store-failed"))
    case("re-signed, incomplete, a failed store (not in the log)", 13, residue(1, "UNVERIFIED-store-failed", complete=False))
    case("re-signed, complete, a residual store", 10, residue(0, "RESIDUAL"))
    case("re-signed, complete, a deferred reclaim (not in the log)", 13, residue(0, "PENDING-reclaim-deferred"))

    # JSON types as Go's encoding/json reads the payload into the statement:
    # null is the zero value, another JSON type is refused.
    case("re-signed, complete a string", 10, pred("complete", "true"))
    case("re-signed, a count a float", 10, signed(lambda st: st["predicate"]["counts"].__setitem__("verified", 2.0)))
    case("re-signed, a count a boolean", 10, signed(lambda st: st["predicate"]["counts"].__setitem__("residual", False)))
    case("re-signed, a reason a number", 10, signed(art(2, lambda a: a.__setitem__("reason", 7))))
    case("re-signed, found_after null (not in the log)", 13, signed(art(0, lambda a: a["measurement"]["physical"].__setitem__("found_after", None))))
    case("re-signed, complete null (not in the log)", 13, pred("complete", None))
    # What the in-toto parse (protojson) refuses: not JSON (NaN), a number
    # of the predicate beyond float64, an unpaired surrogate, a field under
    # both its JSON and proto names or of the wrong type, a known digest
    # algorithm of the wrong length.
    case("re-signed, NaN in the predicate", 10, raw_edit(b'"complete":false', b'"complete":false,"x_note":NaN'))
    case("re-signed, a number of the predicate beyond float64", 10, raw_edit(b'"complete":false', b'"complete":false,"x_note":1e400'))
    case("re-signed, a large number of the predicate (not in the log)", 13, raw_edit(b'"complete":false', b'"complete":false,"x_note":1e300'))
    case("re-signed, a number beyond float64 outside the predicate (not in the log)", 13, raw_edit(b'"predicateType":', b'"x_note":1e400,"predicateType":'))
    case("re-signed, an unpaired surrogate", 10, raw_edit(b'"scope":"tenant/acme"', b'"scope":"tenant/acme\\ud800"'))
    case("re-signed, a surrogate pair (not in the log)", 13, raw_edit(b'"scope":"tenant/acme"', b'"scope":"tenant/acme\\ud83d\\ude00"'))
    case("re-signed, _type also given as type", 10, signed(lambda st: st.__setitem__("type", st["_type"])))
    case("re-signed, a subject uri a number", 10, signed(lambda st: st["subject"][0].__setitem__("uri", 5)))
    case("re-signed, a subject uri (not in the log)", 13, signed(lambda st: st["subject"][0].__setitem__("uri", "https://example.org/erasure")))
    case("re-signed, a sha1 digest of the wrong length", 10, signed(lambda st: st["subject"][0]["digest"].__setitem__("sha1", "abcd")))
    case("re-signed, a sha1 digest (not in the log)", 13, signed(lambda st: st["subject"][0]["digest"].__setitem__("sha1", "ab" * 20)))
    case("re-signed, a digest of an unknown algorithm, not hex (not in the log)", 13, signed(lambda st: st["subject"][0]["digest"].__setitem__("x-custom", "not hex")))
    # Times as Go's time.Parse(time.RFC3339, ...) reads them.
    case("re-signed, issued_at with a lower-case t", 10, pred("issued_at", "2025-03-01t12:00:00Z"))
    case("re-signed, issued_at at hour 24", 10, pred("issued_at", "2025-03-01T24:00:00Z"))
    case("re-signed, issued_at with a comma before its fraction (not in the log)", 13, pred("issued_at", "2025-03-01T12:00:00,5Z"))
    case("re-signed, issued_at with a one-digit hour (not in the log)", 13, pred("issued_at", "2025-03-01T9:00:00Z"))
    case("re-signed, valid_until at offset +24:00 (not in the log)", 13, pred("valid_until", "2026-03-01T12:00:00+24:00"))
    return out


def python_code(data: bytes, pem: str) -> int:
    try:
        verify_bundle(data, [load_public_key(pem)])
        return 0
    except CertificateInvalid as e:
        return e.exit_code


def go_code(data: bytes, pem: str) -> int:
    with tempfile.TemporaryDirectory() as d:
        cert, key = os.path.join(d, "cert.json"), os.path.join(d, "key.pem")
        with open(cert, "wb") as f:
            f.write(data)
        with open(key, "w") as f:
            f.write(pem)
        r = subprocess.run([BIN, "verify", cert, "--public-key", key], capture_output=True, timeout=60)
        return r.returncode


class TestOffline(unittest.TestCase):
    def setUp(self) -> None:
        with open(os.path.join(TESTDATA, "golden-v1.bundle.json"), "rb") as f:
            self.raw = f.read()
        with open(os.path.join(TESTDATA, "golden-v1.pub.pem")) as f:
            self.pem = f.read()

    def test_signing_helper_is_the_golden_key(self) -> None:
        h = hashlib.sha512(GOLDEN_SEED).digest()
        a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
        self.assertEqual(E._encode(E._mul(a, E._G)), load_public_key(self.pem).public)

    def test_golden_and_tampered_match_expected_codes(self) -> None:
        for name, data, want in cases(self.raw):
            with self.subTest(name):
                self.assertEqual(python_code(data, self.pem), want)

    def test_wrong_key(self) -> None:
        other = pem_of(E._encode(E._mul(123456789, E._G)))
        self.assertEqual(python_code(self.raw, other), 12)

    @unittest.skipUnless(BIN, "AMNESIA_BIN not set: the Go verifier's verdicts are not compared (scripts/test-clients sets it)")
    def test_same_verdicts_as_amnesia_verify(self) -> None:
        other = pem_of(E._encode(E._mul(123456789, E._G)))
        all_cases = cases(self.raw) + [("wrong key", self.raw, 12)]
        for name, data, _ in all_cases:
            pem = other if name == "wrong key" else self.pem
            with self.subTest(name):
                self.assertEqual(python_code(data, pem), go_code(data, pem))

    def test_bare_envelope_verifies_alone(self) -> None:
        with open(os.path.join(TESTDATA, "golden-v1.dsse.json"), "rb") as f:
            env = f.read()
        st = verify_envelope(env, load_public_key(self.pem))
        self.assertEqual(st["predicate"]["certificate_id"], "01JNB5Q6X2R7Y8Z9A0B1C2D3E4")

    def test_core_needs_only_the_standard_library(self) -> None:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import amnesia_client, amnesia_client.offline; "
            "bad = [m for m in ('langchain_core', 'llama_index', 'faiss', 'numpy', 'pydantic') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)"
        )
        pkg = os.path.join(ROOT, "clients", "python")
        r = subprocess.run([__import__("sys").executable, "-S", "-c", code, pkg], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_ed25519_rfc8032_vector(self) -> None:
        # RFC 8032 section 7.1, TEST 2.
        pub = bytes.fromhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        sig = bytes.fromhex(
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        )
        self.assertTrue(E.verify(pub, b"\x72", sig))
        self.assertFalse(E.verify(pub, b"\x73", sig))
        bad_s = sig[:32] + (int.from_bytes(sig[32:], "little") + E._L).to_bytes(32, "little")
        self.assertFalse(E.verify(pub, b"\x72", bad_s))


if __name__ == "__main__":
    unittest.main()
