// In-browser verification of an amnesia certificate bundle.
//
// Everything here runs in the browser with WebCrypto: the server is not
// asked whether the certificate is valid. The checks follow
// certificate.VerifyBundle:
//   1. the bundle's form (application/vnd.amnesia.certificate.v1+json);
//   2. the signing key: the envelope's key id is "sha256:" + hex SHA-256 of
//      the key's SubjectPublicKeyInfo DER;
//   3. the DSSE signature: Ed25519 over PAE("DSSEv1", payloadType, payload);
//   4. the payload names the same key and a certificate id;
//   5. the checkpoint: a C2SP signed note whose body is origin, size and
//      root hash, signed by the same Ed25519 key under the log's origin
//      (key hash = SHA-256(origin || "\n" || 0x01 || key)[:4]);
//   6. the inclusion proof (RFC 6962 / RFC 9162): the certificate's leaf
//      "amnesia/certificate/v1\n<id>\n<hex sha256(payload)>\n", hashed as
//      SHA-256(0x00 || leaf), leads to the checkpoint's root.
// Between 4 and 5, two of certificate/check.go's schema checks: "keys" (no
// payload key differs from a field of the schema only in case, which Go's
// JSON reader would take for that field) and "consistency" (the
// certificate's own measurements agree with its outcomes, its counts and
// its complete flag; near-duplicate candidates are left to a person; via
// is reconcile or absent; out_of_scope names something; complete is not set
// next to a declared store that is RESIDUAL, UNVERIFIED-store-failed, or
// UNREACHABLE and not named in out_of_scope; models meet their outcome and
// leave complete false unless VERIFIED). Repeated keys are not
// detected here: JSON.parse keeps the last one without telling.

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

export const MEDIA_TYPE = "application/vnd.amnesia.certificate.v1+json";
const LEAF_KIND = "amnesia/certificate/v1";
// The 12-byte DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410).
const SPKI_PREFIX = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

export function b64decode(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    throw new Error("not standard base64");
  }
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function b64encode(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(...parts) {
  const n = parts.reduce((a, p) => a + p.length, 0);
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function equal(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

// pemToSPKI returns the DER of the first "PUBLIC KEY" block of text.
export function pemToSPKI(text) {
  const m = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/.exec(text || "");
  if (!m) throw new Error("no PUBLIC KEY PEM block");
  const der = b64decode(m[1].replace(/\s+/g, ""));
  if (der.length !== 44 || !equal(der.subarray(0, 12), Uint8Array.from(SPKI_PREFIX))) {
    throw new Error("the PEM block is not an Ed25519 public key");
  }
  return der;
}

// keyIdOf returns amnesia's key id of an SPKI DER: "sha256:<hex>".
export async function keyIdOf(spki) {
  return "sha256:" + hex(await sha256(spki));
}

// SCHEMA_FIELDS are the JSON names of every field of the statement
// (certificate.SchemaFields in Go; a Go test compares the two lists).
export const SCHEMA_FIELDS = new Set([
  "_type", "artifacts", "by_filter", "by_id", "by_similarity", "bytes_scanned", "canaries",
  "candidates", "capabilities", "certificate_id", "choices", "complete", "copies",
  "copies_unlisted", "counts", "coverage", "covered_bytes", "covers", "crypto_shredding",
  "declared_scope", "deleted", "digest", "does_not_cover", "drift", "endpoint",
  "erased_neighbours", "error", "evidence", "exposure", "extracted", "files_scanned", "flagged",
  "follows", "found_after", "found_before", "fpr_any", "fpr_per_canary", "fragment_bytes", "head",
  "id", "issued_at", "journal", "k", "key_destroyed", "key_id", "kind", "level", "log_index",
  "logical", "measurement", "method", "methods", "millis", "min_overlap_at_k", "model", "models",
  "name", "near", "needles", "needs_human", "neighbours", "not_searched", "note", "of",
  "of_windows", "out_of_scope", "outcome", "overlap_at_k", "overlap_unerased_at_k",
  "payload_sha256", "physical", "predicate", "predicateType", "probe_after", "probe_before",
  "queries", "quote_fraction", "reason", "reclaim", "record", "record_bytes", "records",
  "references", "requests", "residual", "residue", "retrain", "retrain_millis", "retrained",
  "reverifiable", "reverifies", "reverify_note", "rows", "run", "schema_version", "scope",
  "sealed", "sealed_artifacts", "searches", "semantic", "served", "sha256", "shard", "sharded",
  "shards", "shared", "similarity", "steps", "store", "subject", "subject_ref", "subject_rows",
  "tainted", "tainted_files_left", "touched", "trace", "trained_without", "type", "unverified",
  "valid_until", "verified", "verified_logical", "verified_physical", "via", "what",
  "window_bytes", "windows"
]);

const fold = (k) => k.toUpperCase().toLowerCase();
const FOLDED_FIELDS = new Map([...SCHEMA_FIELDS].map((f) => [fold(f), f]));

// keysProblem returns why a key of the payload would be read differently
// by Go's JSON reader (a key that differs from a field only in case), or "".
export function keysProblem(node) {
  if (Array.isArray(node)) {
    for (const x of node) {
      const p = keysProblem(x);
      if (p) return p;
    }
    return "";
  }
  if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (!SCHEMA_FIELDS.has(k) && FOLDED_FIELDS.has(fold(k))) {
        return `the payload has a key that differs from the field ${FOLDED_FIELDS.get(fold(k))} only in case`;
      }
      const p = keysProblem(v);
      if (p) return p;
    }
  }
  return "";
}

const OUTCOMES = ["VERIFIED", "UNVERIFIED", "RESIDUAL", "OUT_OF_SCOPE", "NEEDS_HUMAN"];
const obj = (v) => (v && typeof v === "object" && !Array.isArray(v) ? v : {});
const num = (v) => (typeof v === "number" ? v : 0);

// consistencyProblem returns where a predicate contradicts itself (as
// certificate/check.go refuses it), or "".
export function consistencyProblem(pred) {
  const arts = Array.isArray(pred.artifacts) ? pred.artifacts : [];
  const counts = { artifacts: arts.length, verified: 0, verified_physical: 0, verified_logical: 0, unverified: 0, residual: 0, out_of_scope: 0, needs_human: 0 };
  for (let i = 0; i < arts.length; i++) {
    const a = obj(arts[i]);
    const m = obj(a.measurement);
    const at = `artifact ${i + 1}`;
    if (a.via !== undefined && a.via !== null && a.via !== "" && a.via !== "reconcile") return `${at} has a via other than reconcile`;
    const near = nearProblem(a, m, at);
    if (near) return near;
    if (a.outcome === "VERIFIED") {
      if (a.level !== "physical" && a.level !== "logical") return `${at} is VERIFIED at no level (physical or logical)`;
      if ((Array.isArray(m.copies) && m.copies.length > 0) || num(m.copies_unlisted) > 0) return `${at} is VERIFIED but its measurement lists copies outside the lineage`;
      const lg = obj(m.logical);
      if (lg.by_id || lg.by_filter || lg.by_similarity) return `${at} is VERIFIED but its measurement says a query still returns it`;
      const ph = obj(m.physical);
      if (num(ph.found_after) !== 0) return `${at} is VERIFIED but the byte scan after deletion found ${ph.found_after} of its fragments`;
      if (a.level === "physical") {
        if (m.physical === undefined || m.physical === null) return `${at} is VERIFIED(physical) without a physical measurement`;
        if (num(ph.needles) <= 0 || num(ph.found_before) <= 0) return `${at} is VERIFIED(physical) but the byte scan found none of its fragments before deletion (the probe had no power)`;
        const cov = obj(ph.coverage);
        if (Object.keys(cov).length > 0 && num(cov.covered_bytes) < num(cov.record_bytes)) return `${at} is VERIFIED(physical) but its fragments cover less than the record`;
      }
      counts.verified++;
      counts["verified_" + a.level]++;
    } else if (OUTCOMES.includes(a.outcome)) {
      if (!a.reason) return `${at} is ${a.outcome} without a reason`;
      counts[a.outcome.toLowerCase()]++;
    } else {
      return `${at} has an unknown outcome`;
    }
  }
  const got = obj(pred.counts);
  for (const [k, want] of Object.entries(counts)) {
    if (num(got[k]) !== want) return `the counts say ${num(got[k])} ${k}, the artifacts ${want}`;
  }
  if (pred.complete === true && counts.unverified + counts.residual + counts.out_of_scope > 0) {
    return "the certificate says complete, but an artifact is UNVERIFIED, RESIDUAL or OUT_OF_SCOPE";
  }
  const oos = Array.isArray(pred.out_of_scope) ? pred.out_of_scope : [];
  if (oos.length === 0) return "the certificate's out_of_scope is empty: every certificate names what it does not cover";
  for (let i = 0; i < oos.length; i++) {
    if (!obj(oos[i]).what) return `out_of_scope entry ${i + 1} names nothing (its what is empty)`;
  }
  const scope = declaredScopeProblem(pred, oos);
  if (scope) return scope;
  const models = Array.isArray(pred.models) ? pred.models : [];
  for (let i = 0; i < models.length; i++) {
    const md = obj(models[i]);
    const at = `model ${i + 1}`;
    if (md.level !== "model") return `${at} is not at level model`;
    if (md.outcome === "VERIFIED") {
      if (!modelVerified(md)) return `${at} is VERIFIED but its shards or probe do not show it`;
    } else if (MODEL_OUTCOMES.includes(md.outcome)) {
      if (!md.reason) return `${at} is ${md.outcome} without a reason`;
      if (pred.complete === true) return `the certificate says complete, but ${at} is ${md.outcome}`;
    } else {
      return `${at} has an unknown outcome`;
    }
  }
  return "";
}

// declaredScopeProblem mirrors certificate/check.go's checkDeclaredScope:
// complete is not set next to a configured store that was not erased or not
// checked: one that is RESIDUAL or UNVERIFIED-store-failed, or one that is
// UNREACHABLE while no out_of_scope entry names it ("store NAME" or
// "store NAME (unreachable)", as amnesia writes them; "files of store NAME"
// excludes only its files). Other states say why the physical level was not
// reached, which complete does not claim. The message names the store by
// its place in declared_scope, not by its name.
function declaredScopeProblem(pred, oos) {
  if (pred.complete !== true) return "";
  const stores = Array.isArray(pred.declared_scope) ? pred.declared_scope : [];
  for (let i = 0; i < stores.length; i++) {
    const s = obj(stores[i]);
    const at = `store ${i + 1} of declared_scope`;
    if (s.residue === "RESIDUAL" || s.residue === "UNVERIFIED-store-failed") {
      return `the certificate says complete, but ${at} is ${s.residue}`;
    }
    if (s.residue === "UNREACHABLE") {
      const name = typeof s.name === "string" ? s.name : "";
      const named = oos.some((x) => obj(x).what === "store " + name || obj(x).what === "store " + name + " (unreachable)");
      if (!named) return `the certificate says complete, but ${at} is UNREACHABLE (nothing in it was checked) and no out_of_scope entry names it`;
    }
  }
  return "";
}

// nearProblem mirrors certificate/check.go's checkNear: a near-duplicate
// candidate is left to a person, never deleted, and says how it was found.
function nearProblem(a, m, at) {
  const has = m.near !== undefined && m.near !== null;
  if (!has && a.kind !== "near-duplicate") return "";
  if (!has) return `${at} is a near-duplicate without measurement.near`;
  if (a.kind !== "near-duplicate") return `${at} has measurement.near but is not a near-duplicate`;
  if (a.outcome !== "NEEDS_HUMAN") return `${at} is a near-duplicate but its outcome is not NEEDS_HUMAN`;
  if (m.deleted === true) return `${at} is a near-duplicate but its measurement says it was deleted`;
  const n = obj(m.near);
  if (n.method !== "quote" && n.method !== "paraphrase") return `${at} is a near-duplicate found by neither quote nor paraphrase`;
  if (!n.of) return `${at} is a near-duplicate of nothing (near.of is empty)`;
  if (!(typeof n.similarity === "number" && n.similarity > 0 && n.similarity <= 1)) return `${at} is a near-duplicate whose similarity is not more than 0 and at most 1`;
  return "";
}

const MODEL_OUTCOMES = ["TAINTED", "UNVERIFIED", "RESIDUAL", "NEEDS_HUMAN"];

// modelVerified mirrors certificate.ModelVerified: every shard retrained
// without the subject's rows and switched in, no tainted file left, and a
// probe after that ran and found nothing.
function modelVerified(md) {
  const after = md.probe_after;
  const ran = after !== undefined && after !== null;
  const pa = obj(after);
  if (md.sharded !== true || !Array.isArray(md.shards) || md.shards.length === 0) return false;
  if (ran && (num(pa.extracted) > 0 || num(pa.flagged) > 0 || pa.error)) return false;
  for (const s0 of md.shards) {
    const sh = obj(s0);
    const r = sh.retrained;
    if (r === undefined || r === null || sh.trained_without !== true || num(obj(r).subject_rows) !== 0 || sh.served !== "switched" || num(sh.tainted_files_left) !== 0) return false;
  }
  return true;
}

// pae is the DSSE pre-authentication encoding.
function pae(payloadType, payload) {
  const t = enc.encode(payloadType);
  return concat(enc.encode(`DSSEv1 ${t.length} `), t, enc.encode(` ${payload.length} `), payload);
}

async function ed25519Verify(spki, sig, msg) {
  const key = await crypto.subtle.importKey("spki", spki, { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, sig, msg);
}

// noteKeyHash is the C2SP signed-note key hash of an Ed25519 key.
async function noteKeyHash(name, raw) {
  const h = await sha256(concat(enc.encode(name), Uint8Array.of(0x0a, 0x01), raw));
  return h.subarray(0, 4);
}

// parseCheckpoint splits a signed note into its body and signature lines.
export function parseCheckpoint(text) {
  const i = text.lastIndexOf("\n\n");
  if (i < 0) throw new Error("the checkpoint is not a signed note");
  const body = text.slice(0, i + 1);
  const lines = body.slice(0, -1).split("\n");
  if (lines.length !== 3) throw new Error("the checkpoint body is not origin, size, root hash");
  const [origin, sizeText, rootText] = lines;
  if (!origin || /[ +\t]/.test(origin)) throw new Error("the checkpoint's origin is malformed");
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) throw new Error("the checkpoint's size is not a decimal");
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw new Error("the checkpoint's size is too large for this page");
  const root = b64decode(rootText);
  if (root.length !== 32) throw new Error("the checkpoint's root hash is not 32 bytes");
  const sigs = [];
  const rest = text.slice(i + 2);
  if (!rest.endsWith("\n")) throw new Error("the checkpoint's signature lines do not end in a newline");
  for (const line of rest.slice(0, -1).split("\n")) {
    if (!line.startsWith("\u2014 ")) throw new Error("a checkpoint signature line does not start with an em dash");
    const [name, b64, extra] = line.slice(2).split(" ");
    if (!name || !b64 || extra !== undefined) throw new Error("a checkpoint signature line is malformed");
    const raw = b64decode(b64);
    if (raw.length < 5) throw new Error("a checkpoint signature is too short");
    sigs.push({ name, hash: raw.subarray(0, 4), sig: raw.subarray(4) });
  }
  return { origin, size, root, body, sigs };
}

async function leafHash(leaf) {
  return sha256(concat(Uint8Array.of(0), leaf));
}

async function nodeHash(l, r) {
  return sha256(concat(Uint8Array.of(1), l, r));
}

// rootFromInclusionProof computes the root of a tree of size leaves from
// the leaf hash at index and its audit path (RFC 9162, 2.1.3.2).
export async function rootFromInclusionProof(index, size, leaf, proof) {
  if (!(index >= 0 && index < size)) throw new Error(`leaf index ${index} is outside a tree of ${size} leaves`);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) throw new Error("the inclusion proof is longer than the tree is deep");
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new Error("the inclusion proof is shorter than the tree is deep");
  return r;
}

// parseBundle parses a bundle's text; it throws on a malformed file.
export function parseBundle(text) {
  let b;
  try {
    b = JSON.parse(text);
  } catch {
    throw new Error("the file is not JSON");
  }
  if (!b || typeof b !== "object" || b.mediaType !== MEDIA_TYPE) {
    throw new Error(`the file is not a certificate bundle (mediaType ${MEDIA_TYPE})`);
  }
  const env = b.dsseEnvelope;
  const le = b.logEntry;
  if (!env || typeof env.payload !== "string" || typeof env.payloadType !== "string") {
    throw new Error("the bundle has no DSSE envelope");
  }
  if (!Array.isArray(env.signatures) || env.signatures.length !== 1) {
    throw new Error("the envelope must carry exactly one signature");
  }
  if (!le || !Number.isSafeInteger(le.logIndex) || !Array.isArray(le.inclusionProof) || typeof le.checkpoint !== "string") {
    throw new Error("the bundle has no transparency log entry");
  }
  const payload = b64decode(env.payload);
  let statement;
  try {
    statement = JSON.parse(dec.decode(payload));
  } catch {
    statement = null; // reported by the checks: the signature decides first
  }
  return { bundle: b, env, logEntry: le, payload, statement };
}

// statementOf returns the decoded statement of a bundle's text without
// verifying anything (for display), or null.
export function statementOf(text) {
  try {
    return parseBundle(text).statement;
  } catch {
    return null;
  }
}

// verifyBundle checks bundle text against a public key (PEM text); the
// checkpoint may also be signed by one of otherPems (the installation's
// other keys, after a rotation). It returns {valid, failed, checks: [{name, ok, detail}], certificateId,
// logIndex, keyId}. failed names the first check that failed.
export async function verifyBundle(text, pemText, otherPems) {
  const checks = [];
  const res = { valid: false, failed: "", checks, certificateId: "", logIndex: -1, keyId: "" };
  const add = (name, ok, detail) => {
    checks.push({ name, ok, detail });
    if (!ok && !res.failed) res.failed = name;
    return ok;
  };
  let p;
  try {
    p = parseBundle(text);
    add("form", true, "a v1 certificate bundle with one signature and a log entry");
  } catch (e) {
    add("form", false, e.message);
    return res;
  }
  let spki;
  try {
    spki = pemToSPKI(pemText);
  } catch (e) {
    add("key", false, "the public key: " + e.message);
    return res;
  }
  const keyId = await keyIdOf(spki);
  res.keyId = keyId;
  const sig = p.env.signatures[0];
  if (!add("key", sig.keyid === keyId, sig.keyid === keyId
    ? `signed by key ${keyId}`
    : `the certificate names key ${sig.keyid}, not the key given (${keyId})`)) {
    return res;
  }
  let sigOK = false;
  try {
    sigOK = await ed25519Verify(spki, b64decode(sig.sig), pae(p.env.payloadType, p.payload));
  } catch (e) {
    sigOK = false;
  }
  add("signature", sigOK, sigOK
    ? "the Ed25519 signature over the DSSE payload verifies"
    : "the signature does not verify: the certificate was changed after it was signed, or was signed by another key");

  const st = p.statement;
  const pred = st && st.predicate;
  const stOK = !!pred && typeof pred.certificate_id === "string" && pred.certificate_id !== "" &&
    pred.key_id === keyId && st.predicateType === "https://amnesia.dev/erasure-certificate/v1";
  add("payload", stOK, stOK
    ? `an amnesia erasure certificate v1, id ${pred.certificate_id}`
    : "the payload is not an amnesia erasure certificate naming this key");
  if (stOK) {
    res.certificateId = pred.certificate_id;
    const kp = keysProblem(st);
    add("keys", !kp, kp || "every key of the payload is read the same by any JSON reader (case included)");
    const cons = consistencyProblem(pred);
    add("consistency", !cons, cons || `its ${Array.isArray(pred.artifacts) ? pred.artifacts.length : 0} artifacts' measurements agree with their outcomes, the counts and the complete flag; so do its ${Array.isArray(pred.models) ? pred.models.length : 0} models; out_of_scope names what it does not cover`);
  }
  res.logIndex = p.logEntry.logIndex;

  let cp;
  try {
    cp = parseCheckpoint(p.logEntry.checkpoint);
  } catch (e) {
    add("checkpoint", false, e.message);
    return res;
  }
  // The log signs checkpoints with the installation's key of the day: the
  // certificate's key, or after a rotation another of the keys given.
  let cpOK = false;
  let cpKey = keyId;
  const logKeys = [spki];
  for (const pem of otherPems || []) {
    try {
      logKeys.push(pemToSPKI(pem));
    } catch {
      // a malformed extra key is skipped
    }
  }
  for (const k of logKeys) {
    const kh = await noteKeyHash(cp.origin, k.subarray(12));
    const s = cp.sigs.find((x) => x.name === cp.origin && equal(x.hash, kh) && x.sig.length === 64);
    if (!s) continue;
    try {
      cpOK = await ed25519Verify(k, s.sig, enc.encode(cp.body));
    } catch {
      cpOK = false;
    }
    if (cpOK) {
      cpKey = await keyIdOf(k);
      break;
    }
  }
  add("checkpoint", cpOK, cpOK
    ? `the log ${cp.origin} signed a tree of ${cp.size} entries with ${cpKey === keyId ? "this key" : "key " + cpKey}`
    : `the checkpoint of log ${cp.origin} carries no valid signature by ${logKeys.length > 1 ? "a key given" : "this key"}`);

  let incOK = false;
  let incDetail = "";
  if (stOK) {
    try {
      const digest = hex(await sha256(p.payload));
      const leaf = enc.encode(`${LEAF_KIND}\n${pred.certificate_id}\n${digest}\n`);
      const proof = p.logEntry.inclusionProof.map((h) => {
        const b = b64decode(h);
        if (b.length !== 32) throw new Error("a proof hash is not 32 bytes");
        return b;
      });
      const root = await rootFromInclusionProof(p.logEntry.logIndex, cp.size, await leafHash(leaf), proof);
      incOK = equal(root, cp.root);
      incDetail = incOK
        ? `entry ${p.logEntry.logIndex} of the log's ${cp.size}: the inclusion proof leads to the signed root`
        : "the inclusion proof does not lead to the checkpoint's root: this certificate is not the one the log holds";
    } catch (e) {
      incDetail = "inclusion proof: " + e.message;
    }
  } else {
    incDetail = "no certificate id to place in the log";
  }
  add("inclusion", incOK, incDetail);
  res.valid = checks.every((c) => c.ok);
  return res;
}
