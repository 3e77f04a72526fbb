// The certificate in plain words: what was erased in each store, at which
// level, what could not be shown and why, and what the certificate does
// not cover. It says no more than the certificate's measurements.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + "s"}`;
}

const OUTCOME_WORDS = {
  VERIFIED: "erased and shown gone",
  RESIDUAL: "still found after erasure",
  UNVERIFIED: "deleted, but could not be shown gone",
  NEEDS_HUMAN: "left for a person to decide",
  OUT_OF_SCOPE: "not acted on",
};

// levelWords says how a group of artifacts verified at one level was
// shown gone, with the group's summed measurements.
function levelWords(g) {
  if (g.level === "physical") {
    const ph = g.physical;
    let s = "physical: a byte scan of the store's files";
    if (ph.n > 0) {
      s += ` found ${ph.found_after} of the ${ph.needles} fragments taken from ${g.n === 1 ? "the record" : "the records"}` +
        ` (${ph.found_before} of them were found before the erasure, so the scan could see them)`;
      if (ph.files) s += `; ${plural(ph.files, "file")} scanned`;
      if (ph.record_bytes > 0) {
        s += ph.covered_bytes >= ph.record_bytes
          ? "; the fragments cover every byte of the records"
          : `; the fragments cover ${ph.covered_bytes} of the records' ${ph.record_bytes} bytes`;
      }
    }
    return s;
  }
  if (g.level === "logical") {
    const ways = [...g.methods].map((x) => x.replace(/^by_/, "by ").replace(/_/g, " "));
    return "logical: no query returns " + (g.n === 1 ? "it" : "them") + (ways.length ? ` (asked ${ways.join(", ")})` : "") +
      "; their bytes were not searched for in the store's files";
  }
  return "";
}

// group counts the artifacts of one store by kind and outcome/level.
function groupStore(arts) {
  const rows = new Map();
  for (const a of arts) {
    const key = [a.kind, a.outcome, a.level || "", a.reason || ""].join("\u0000");
    let r = rows.get(key);
    if (!r) {
      r = { kind: a.kind, outcome: a.outcome, level: a.level, reason: a.reason, n: 0, methods: new Set(),
        physical: { n: 0, needles: 0, found_before: 0, found_after: 0, files: 0, record_bytes: 0, covered_bytes: 0 } };
      rows.set(key, r);
    }
    r.n++;
    const m = a.measurement || {};
    for (const x of (m.logical && m.logical.methods) || []) r.methods.add(x);
    const ph = m.physical;
    if (ph) {
      const s = r.physical;
      s.n++;
      s.needles += ph.needles || 0;
      s.found_before += ph.found_before || 0;
      s.found_after += ph.found_after || 0;
      s.files = Math.max(s.files, ph.files_scanned || 0);
      if (ph.coverage) {
        s.record_bytes += ph.coverage.record_bytes || 0;
        s.covered_bytes += ph.coverage.covered_bytes || 0;
      }
    }
  }
  return [...rows.values()];
}

// renderWords returns the plain-words view of a statement (the decoded
// payload). verified says whether the page checked its signature.
export function renderWords(st, verified) {
  const p = st && st.predicate;
  if (!p) return el("p", { class: "bad", text: "This file holds no readable certificate." });
  const c = p.counts || {};
  const box = el("div", { class: "words" });
  if (!verified) {
    box.append(el("p", { class: "hint", text: "As the certificate says — verify it to know it is genuine and unchanged." }));
  }
  box.append(el("p", { class: "lead" },
    `Certificate ${p.certificate_id}, issued ${p.issued_at} for the subject ${p.subject_ref} in scope ${p.scope}. `,
    `Reason: ${p.reason}.`));
  box.append(el("p", { class: p.complete ? "verdict good" : "verdict warn" },
    p.complete
      ? `Complete: every one of the ${plural(c.artifacts, "traced artifact")} that amnesia could erase was erased and shown gone.`
      : `Not complete: ${c.verified} of ${plural(c.artifacts, "traced artifact")} were erased and shown gone; the rest is listed below with the reason.`));
  box.append(el("p", {},
    `${plural(c.verified_physical || 0, "artifact")} at the physical level (their bytes were searched for in the store's files and not found), `,
    `${plural(c.verified_logical || 0, "artifact")} at the logical level (no query returns them; their bytes were not searched for).`,
    c.needs_human ? ` ${c.needs_human} left for a person to decide.` : "",
    c.unverified ? ` ${c.unverified} deleted but not shown gone.` : "",
    c.residual ? ` ${c.residual} still found after erasure.` : ""));

  const byStore = new Map();
  for (const a of p.artifacts || []) {
    if (!byStore.has(a.store)) byStore.set(a.store, []);
    byStore.get(a.store).push(a);
  }
  box.append(el("h4", { text: "Per store" }));
  for (const s of p.declared_scope || []) {
    const arts = byStore.get(s.name) || [];
    const sec = el("div", { class: "store", "data-store": s.name });
    sec.append(el("h5", {}, `${s.name} `, el("span", { class: "hint", text: `(${s.type})` })));
    if (!s.touched) {
      sec.append(el("p", { text: "Not touched: the subject has no traced artifact in this store." }));
      box.append(sec);
      continue;
    }
    sec.append(el("p", {}, `${plural(s.artifacts, "artifact")}; result: ${s.residue}. `, s.evidence ? `Evidence: ${s.evidence}.` : ""));
    const ul = el("ul");
    for (const g of groupStore(arts)) {
      const cls = g.outcome === "VERIFIED" ? "good" : g.outcome === "OUT_OF_SCOPE" ? "" : "warn";
      const li = el("li", { class: cls },
        el("strong", { text: `${plural(g.n, g.kind)}: ${OUTCOME_WORDS[g.outcome] || g.outcome}` }));
      if (g.outcome === "VERIFIED") li.append(" — ", levelWords(g));
      if (g.reason) li.append(" — why: ", g.reason);
      ul.append(li);
    }
    sec.append(ul);
    box.append(sec);
  }
  const oos = p.out_of_scope || [];
  box.append(el("h4", { text: "Not covered by this certificate" }));
  if (oos.length === 0) {
    box.append(el("p", { text: "The certificate lists no exclusion." }));
  } else {
    box.append(el("ul", { class: "out-of-scope" }, oos.map((x) => el("li", {}, el("strong", { text: x.what }), ": ", x.reason))));
  }
  box.append(el("p", { class: "hint" },
    `Trace ${p.trace.id} (${plural(p.trace.artifacts, "artifact")}); journal of ${p.journal.steps} steps; valid until ${p.valid_until}. `,
    p.reverifiable ? "The stores can be probed again with the same trace." : (p.reverify_note || "")));
  return box;
}
