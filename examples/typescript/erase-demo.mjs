#!/usr/bin/env node
// @ts-check
// A short Node (>= 20) example of amnesia's HTTP API with the built-in fetch and
// no npm dependencies: write two people's documents, chunks and embeddings into
// SQLite files that amnesia.yaml configures as stores (through the sqlite3
// command-line shell, with sqlite-vec loaded for the vectors), record their
// lineage, erase one person (request → preview → confirm → wait), download the
// certificate and show the person's rows are gone.
//
//   AMNESIA_URL=http://127.0.0.1:7468 AMNESIA_TOKEN_CAPTURE=amn_... AMNESIA_TOKEN_OPERATOR=amn_... \
//   TS_DOCS_DB=ts-docs.db TS_VECTORS_DB=ts-vectors.db SQLITE_VEC_PATH=/path/to/vec0 node erase-demo.mjs
//
// `node erase-demo.mjs setup` only creates the two files (run it before `amnesia init`).

import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const env = process.env;
const cfg = {
  url: (env.AMNESIA_URL ?? "").replace(/\/+$/, ""),
  capture: env.AMNESIA_TOKEN_CAPTURE ?? "",
  operator: env.AMNESIA_TOKEN_OPERATOR ?? "",
  docsDB: env.TS_DOCS_DB ?? "",
  vectorsDB: env.TS_VECTORS_DB ?? "",
  docsStore: env.TS_DOCS_STORE ?? "ts-docs",
  vectorsStore: env.TS_VECTORS_STORE ?? "ts-vectors",
  vec0: env.SQLITE_VEC_PATH ?? "",
  out: env.TS_OUT ?? "certificates",
};
const DIM = 64;

/** @param {string} msg */
function die(msg) {
  console.error(`erase-demo: ${msg}`);
  process.exit(1);
}

// ------------------------------------------------------------------ the API

/** An RFC 9457 problem answered by amnesia; never carries the request body. */
class AmnesiaError extends Error {
  /** @param {number} status @param {any} p */
  constructor(status, p) {
    const fields = Array.isArray(p?.errors) ? p.errors.map((/** @type {any} */ e) => `${e.location ?? ""}: ${e.message ?? ""}`) : [];
    super([`${status} ${p?.title ?? "error"}`, p?.detail, ...fields].filter(Boolean).join("; "));
    this.status = status;
    this.title = p?.title ?? "";
    this.type = p?.type ?? "about:blank";
  }
}

/**
 * @param {string} token
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {string} [accept]
 * @returns {Promise<Response>}
 */
async function call(token, method, path, body, accept = "application/json") {
  const res = await fetch(cfg.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: accept, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    const text = await res.text();
    let p = {};
    try { p = JSON.parse(text); } catch { p = { title: res.statusText }; }
    throw new AmnesiaError(res.status, p);
  }
  return res;
}

/** @param {string} token @param {string} method @param {string} path @param {unknown} [body] */
const json = async (token, method, path, body) => (await call(token, method, path, body)).json();

// ------------------------------------------------------------------ the app's stores

/** Runs SQL in the sqlite3 shell (with sqlite-vec loaded when asked). @param {string} db @param {string} sql @param {boolean} [vec] */
function sql(db, sql, vec = false) {
  const args = vec ? ["-cmd", `.load ${cfg.vec0}`] : [];
  return execFileSync("sqlite3", [...args, "-bail", db], { input: sql, encoding: "utf8" }).trim();
}
/** @param {string} s */
const q = (s) => `'${s.replaceAll("'", "''")}'`;

function setup() {
  // The sqlite-doc and sqlite-vec layouts amnesia's adapters read (store/sqlitedoc, store/sqlitevec).
  sql(cfg.docsDB, `CREATE TABLE IF NOT EXISTS documents (id TEXT PRIMARY KEY, kind TEXT NOT NULL,
    subject TEXT NOT NULL DEFAULT '', parent TEXT NOT NULL DEFAULT '', text TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS documents_subject ON documents (subject);`);
  sql(cfg.vectorsDB, `CREATE VIRTUAL TABLE IF NOT EXISTS vectors USING vec0(id TEXT PRIMARY KEY, embedding float[${DIM}], subject TEXT);`, true);
}

/** Hashed character trigrams, L2-normalised, rounded to float32. @param {string} text */
function embed(text) {
  const v = new Float64Array(DIM);
  const t = ` ${text.toLowerCase().replace(/\s+/g, " ").trim()} `;
  for (let i = 0; i + 3 <= t.length; i++) {
    const h = createHash("sha256").update(t.slice(i, i + 3)).digest();
    v[h.readUInt32LE(0) % DIM] += h[4] & 1 ? -1 : 1;
  }
  const n = Math.hypot(...v) || 1;
  return Array.from(v, (x) => Math.fround(x / n));
}

/** @param {string} user */
function count(user) {
  const d = Number(sql(cfg.docsDB, `SELECT count(*) FROM documents WHERE subject = ${q(user)};`));
  const v = Number(sql(cfg.vectorsDB, `SELECT count(*) FROM vectors WHERE subject = ${q(user)};`, true));
  return [d, v];
}

// ------------------------------------------------------------------ the demo

const people = {
  "carol@example.com": { user: "u-3003", docs: ["Carol Diaz booked a demo of the analytics add-on for her retail team. She asked for pricing in euros. The sales engineer sent a quote on Friday."] },
  "dave@example.com": { user: "u-4004", docs: ["Dave Lin opened a ticket about SSO login loops in Safari. Clearing the session cookie fixed it. The fix shipped in release 4.2."] },
};

async function ingest() {
  const run = randomUUID().slice(0, 8);
  /** @type {any[]} */
  const records = [];
  let docSQL = "BEGIN;", vecSQL = "BEGIN;";
  for (const [email, p] of Object.entries(people)) {
    p.docs.forEach((text, n) => {
      const doc = `doc-${run}-${p.user}-${n}`;
      docSQL += `INSERT INTO documents VALUES (${q(doc)}, 'document', ${q(p.user)}, '', ${q(text)});`;
      records.push({ store: cfg.docsStore, key: doc, kind: "source", subject: email, content: text });
      text.split(/(?<=[.!?])\s+/).forEach((chunk, i) => {
        const id = `${doc}#${i}`, vec = embed(chunk);
        docSQL += `INSERT INTO documents VALUES (${q(id)}, 'chunk', ${q(p.user)}, ${q(doc)}, ${q(chunk)});`;
        vecSQL += `INSERT INTO vectors (id, embedding, subject) VALUES (${q(id)}, ${q(JSON.stringify(vec))}, ${q(p.user)});`;
        records.push({ store: cfg.docsStore, key: id, kind: "chunk", parent: { store: cfg.docsStore, key: doc }, content: chunk });
        records.push({ store: cfg.vectorsStore, key: id, kind: "embedding", parent: { store: cfg.docsStore, key: id }, vector: vec });
      });
    });
  }
  sql(cfg.docsDB, docSQL + "COMMIT;");
  sql(cfg.vectorsDB, vecSQL + "COMMIT;", true);
  // At most 1000 records per call.
  let recorded = 0;
  for (let i = 0; i < records.length; i += 1000) {
    recorded += (await json(cfg.capture, "POST", "/v1/lineage", { records: records.slice(i, i + 1000) })).recorded;
  }
  console.log(`ingest: ${records.length} artifacts written, lineage recorded ${recorded}`);
}

/** @param {string} email */
async function erase(email) {
  const req = await json(cfg.operator, "POST", "/v1/requests", { subject: email, reason: "DSR-2026-0043" });
  const pv = await json(cfg.operator, "POST", `/v1/requests/${req.id}/preview`, {});
  console.log(`erase: request ${req.id}, preview ${pv.counts.artifacts} artifacts in ${pv.counts.stores.map((/** @type {any} */ s) => `${s.store} (${s.records})`).join(", ")}`);
  await json(cfg.operator, "POST", `/v1/requests/${req.id}/confirm`, { confirmation: pv.confirmation });
  let r = req;
  for (const deadline = Date.now() + 180_000; !["done", "failed", "paused"].includes(r.state); ) {
    if (Date.now() > deadline) die(`request ${req.id} still ${r.state}`);
    await new Promise((ok) => setTimeout(ok, 500));
    r = await json(cfg.operator, "GET", `/v1/requests/${req.id}`);
  }
  console.log(`erase: request ${r.id} ${r.state}, complete=${r.complete}${r.error ? `, error: ${r.error}` : ""}`);
  if (r.state !== "done") return false;
  const bundle = Buffer.from(await (await call(cfg.operator, "GET", `/v1/certificates/${r.certificate_id}`, undefined, "application/vnd.amnesia.certificate.v1+json")).arrayBuffer());
  mkdirSync(cfg.out, { recursive: true });
  const path = join(cfg.out, `${r.certificate_id}.json`);
  writeFileSync(path, bundle);
  const sha = "sha256:" + createHash("sha256").update(bundle).digest("hex");
  const res = await fetch(cfg.url + "/v1/verify", { method: "POST", headers: { Authorization: `Bearer ${cfg.operator}`, "Content-Type": "application/vnd.amnesia.certificate.v1+json" }, body: bundle });
  const v = await res.json();
  console.log(`erase: certificate ${path}, the one the request names: ${sha === r.certificate_sha256}, server verify valid=${v.valid}`);
  return r.complete === true && sha === r.certificate_sha256 && v.valid === true;
}

async function main() {
  const need = { TS_DOCS_DB: cfg.docsDB, TS_VECTORS_DB: cfg.vectorsDB, SQLITE_VEC_PATH: cfg.vec0 };
  if (process.argv[2] !== "setup") Object.assign(need, { AMNESIA_URL: cfg.url, AMNESIA_TOKEN_CAPTURE: cfg.capture, AMNESIA_TOKEN_OPERATOR: cfg.operator });
  const unset = Object.entries(need).filter(([, v]) => !v).map(([k]) => k);
  if (unset.length) die(`set ${unset.join(", ")}`);
  setup();
  if (process.argv[2] === "setup") return console.log(`setup: ${cfg.docsDB} and ${cfg.vectorsDB} ready`);
  await ingest();
  const [carol, dave] = [people["carol@example.com"].user, people["dave@example.com"].user];
  const daveBefore = count(dave);
  console.log(`before: carol ${count(carol).join(" rows / ")} vectors, dave ${daveBefore.join(" rows / ")} vectors`);
  let ok = await erase("carol@example.com");
  const [c, d] = [count(carol), count(dave)];
  console.log(`after:  carol ${c.join(" rows / ")} vectors, dave ${d.join(" rows / ")} vectors`);
  if (c[0] !== 0 || c[1] !== 0) { console.log("erase-demo: FAIL: carol's rows are still there"); ok = false; }
  if (d[0] !== daveBefore[0] || d[1] !== daveBefore[1]) { console.log("erase-demo: FAIL: dave's rows changed"); ok = false; }
  console.log(`erase-demo: ${ok ? "OK: carol erased through the API, dave untouched" : "FAILED"}`);
  process.exitCode = ok ? 0 : 1;
}

main().catch((e) => die(e instanceof AmnesiaError ? `amnesia answered: ${e.message}` : String(e?.stack ?? e)));
