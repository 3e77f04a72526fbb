// The page: sign in, find a subject, erase with a reason, follow the
// request, read and verify the certificate. Plain DOM, no framework; every
// text is set with textContent, never parsed as HTML.
import { el, renderWords } from "./words.js";
import { verifyBundle, statementOf } from "./verify.js";

const $ = (id) => document.getElementById(id);
const state = { csrf: "", principal: null, keys: null, poll: 0, preview: null, bundleText: "" };

function flash(msg, kind) {
  const f = $("flash");
  f.textContent = msg || "";
  f.className = kind || "bad";
  f.hidden = !msg;
}

class HTTPError extends Error {
  constructor(status, msg) {
    super(msg);
    this.status = status;
  }
}

async function api(method, path, body, raw) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = state.csrf;
  let data;
  if (body !== undefined) {
    headers["Content-Type"] = raw ? "application/octet-stream" : "application/json";
    data = raw ? body : JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: data, credentials: "same-origin", cache: "no-store" });
  const ct = res.headers.get("Content-Type") || "";
  const out = ct.startsWith("application/json") ? await res.json() : await res.text();
  if (!res.ok) {
    if (res.status === 401 && path !== "/ui/login") showLogin();
    throw new HTTPError(res.status, (out && out.error) || `the server answered ${res.status}`);
  }
  return out;
}

function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? t : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC");
}

function kindsText(kinds) {
  return Object.entries(kinds || {}).sort().map(([k, n]) => `${n} ${k}`).join(", ");
}

function fillCounts(tbody, summary, t) {
  tbody.replaceChildren(...(t.stores || []).map((s) =>
    el("tr", { "data-store": s.store }, el("td", { text: s.store }), el("td", { text: kindsText(s.kinds) }), el("td", { class: "num", text: String(s.records) }))));
  summary.textContent = t.artifacts === 0
    ? "amnesia holds no artifact for this subject in this scope."
    : `${t.artifacts} artifacts in ${(t.stores || []).length} stores` +
      (t.mentions ? `, ${t.mentions} mentions in other subjects' records` : "") +
      (t.already_erased ? `, ${t.already_erased} already erased` : "") + ".";
}

// ---- sign in ----

function showLogin() {
  stopPoll();
  state.csrf = "";
  state.principal = null;
  $("login").hidden = false;
  $("tabs").hidden = true;
  $("who").hidden = true;
  for (const v of document.querySelectorAll(".view")) v.hidden = true;
  $("token").focus();
}

function signedIn(s) {
  state.csrf = s.csrf;
  state.principal = s.principal;
  $("login").hidden = true;
  $("tabs").hidden = false;
  $("who").hidden = false;
  $("who-name").textContent = `${s.principal.name || s.principal.token_id} · ${s.principal.role}`;
  // Tracing and erasing are an operator's; others start at the request list.
  const operator = s.principal.role === "operator";
  $("tab-erase").hidden = !operator;
  const sel = $("scope");
  const scopes = s.principal.scopes || [];
  sel.replaceChildren(...(scopes.length ? scopes : [""]).map((x) => el("option", { value: x, text: x || "(default)" })));
  route();
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  flash("");
  const tok = $("token").value;
  try {
    const s = await api("POST", "/ui/login", { token: tok });
    $("token").value = "";
    signedIn(s);
  } catch (e) {
    flash(e.message);
  }
});

$("logout").addEventListener("click", async () => {
  try {
    await api("POST", "/ui/logout", {});
  } catch {
    // signed out either way
  }
  history.pushState(null, "", "/");
  showLogin();
});

// ---- routing ----

function stopPoll() {
  if (state.poll) clearTimeout(state.poll);
  state.poll = 0;
}

function show(view) {
  stopPoll();
  flash("");
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + view;
  for (const a of document.querySelectorAll("#tabs a")) {
    a.classList.toggle("active", a.dataset.view === view || (view === "request" && a.dataset.view === "requests"));
  }
}

function route() {
  if (!state.principal) return;
  const path = location.pathname;
  const m = /^\/ui\/requests\/([A-Za-z0-9_-]+)$/.exec(path);
  if (m) {
    show("request");
    loadRequestView(m[1]);
  } else if (path === "/ui/requests") {
    show("requests");
    loadRequests();
  } else if (path === "/ui/verify") {
    show("verify");
    loadKeys().catch(() => {});
  } else if (state.principal.role !== "operator") {
    history.replaceState(null, "", "/ui/requests");
    show("requests");
    loadRequests();
  } else {
    show("erase");
  }
}

function go(path) {
  history.pushState(null, "", path);
  route();
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a[data-nav], #tabs a, #home");
  if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
  ev.preventDefault();
  go(a.getAttribute("href"));
});
window.addEventListener("popstate", route);

// ---- find and erase ----

$("trace-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  flash("");
  $("trace-result").hidden = true;
  try {
    const t = await api("POST", "/ui/api/trace", { scope: $("scope").value, subject: $("subject").value });
    fillCounts($("trace-table").tBodies[0], $("trace-summary"), t);
    $("trace-result").hidden = false;
    $("erase-form").hidden = t.artifacts === 0;
  } catch (e) {
    flash(e.message);
  }
});

$("erase-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  flash("");
  try {
    const out = await api("POST", "/ui/api/requests", {
      scope: $("scope").value,
      subject: $("subject").value,
      reason: $("reason").value,
      external_ref: $("external-ref").value,
      due: $("due").value,
    });
    // The subject leaves the page: the request holds only its keyed reference.
    $("subject").value = "";
    $("trace-result").hidden = true;
    state.preview = out.preview ? { id: out.request.id, ...out.preview } : null;
    go("/ui/requests/" + encodeURIComponent(out.request.id));
    if (out.preview_error) flash(out.preview_error);
  } catch (e) {
    flash(e.message);
  }
});

// ---- requests ----

async function loadRequests() {
  const q = new URLSearchParams();
  if ($("filter-state").value) q.set("state", $("filter-state").value);
  if ($("filter-overdue").checked) q.set("overdue", "true");
  try {
    const out = await api("GET", "/ui/api/requests" + (q.size ? "?" + q : ""));
    const rows = out.requests.map((r) => el("tr", { "data-id": r.id },
      el("td", {}, el("a", { href: "/ui/requests/" + encodeURIComponent(r.id), "data-nav": true, text: r.id })),
      el("td", {}, badge(r.state), r.overdue ? el("span", { class: "badge overdue", text: "overdue" }) : ""),
      el("td", { text: fmtTime(r.received_at) }),
      el("td", { text: fmtTime(r.due_at) }),
      el("td", { text: r.reason }),
      el("td", { text: r.external_ref || "" }),
      el("td", { text: r.state !== "done" ? "" : r.complete ? "complete" : "not complete" })));
    $("requests-table").tBodies[0].replaceChildren(...rows);
    $("requests-empty").hidden = rows.length > 0;
  } catch (e) {
    flash(e.message);
  }
}

$("filter-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  loadRequests();
});

function badge(s) {
  return el("span", { class: "badge state-" + s, text: s });
}

const STEPS = ["received", "previewed", "queued", "running", "done"];

function renderProgress(r) {
  const ol = $("progress");
  const at = r.state === "failed" || r.state === "paused" ? -1 : STEPS.indexOf(r.state);
  ol.replaceChildren(...STEPS.map((s, i) => el("li", { class: i < at ? "past" : i === at ? "now" : "", text: s })));
  if (r.state === "failed" || r.state === "paused") ol.append(el("li", { class: "now bad", text: r.state }));
}

// renderRequest fills the request view (the poll refreshes it).
function renderRequest(r) {
  renderProgress(r);
  const d = $("req-details");
  const row = (k, v) => (v ? [el("dt", { text: k }), el("dd", {}, v)] : []);
  d.replaceChildren(
    ...row("State", el("span", {}, badge(r.state), r.overdue ? el("span", { class: "badge overdue", text: "overdue" }) : "")),
    ...row("Reason", r.reason),
    ...row("Reference", r.external_ref),
    ...row("Scope", r.scope),
    ...row("Subject (keyed reference)", r.subject_ref),
    ...row("Received", fmtTime(r.received_at)),
    ...row("Due", fmtTime(r.due_at)),
    ...row("Updated", fmtTime(r.updated_at)),
    ...row("Trace", r.trace_id),
    ...row("Erasure", r.erasure_id),
    ...row("Certificate", r.certificate_id),
  );
  const canConfirm = (r.state === "received" || r.state === "previewed") && state.principal.role === "operator";
  const pv = state.preview && state.preview.id === r.id ? state.preview : null;
  $("req-preview").hidden = !(canConfirm && pv);
  $("preview-btn").hidden = !(canConfirm && !pv);
  if (canConfirm && pv) {
    fillCounts($("preview-table").tBodies[0], $("preview-summary"), pv.counts);
    $("preview-expiry").textContent = `This preview can be confirmed until ${fmtTime(pv.expires_at)}. Erasure cannot be undone.`;
  }
  $("req-error").hidden = !r.error;
  $("req-error").textContent = !r.error ? "" : (r.state === "failed" ? "The erasure failed: " : "Last error: ") + r.error;
  const done = r.state === "done" && r.certificate_id;
  $("req-cert").hidden = !done;
  if (done && $("req-cert").dataset.id !== r.certificate_id) {
    $("req-cert").dataset.id = r.certificate_id;
    $("download").href = "/ui/api/certificates/" + encodeURIComponent(r.certificate_id);
    $("req-verify-result").replaceChildren();
    $("req-words").replaceChildren(el("p", { class: "hint", text: "Loading the certificate…" }));
    loadCertificate(r.certificate_id);
  }
}

async function loadCertificate(id) {
  try {
    state.bundleText = await fetchText("/ui/api/certificates/" + encodeURIComponent(id));
    $("req-words").replaceChildren(renderWords(statementOf(state.bundleText), false));
  } catch (e) {
    $("req-words").replaceChildren(el("p", { class: "bad", text: e.message }));
  }
}

async function fetchText(path) {
  const res = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (!res.ok) throw new Error(`the certificate could not be loaded (${res.status})`);
  return res.text();
}

async function refresh(id) {
  let r;
  try {
    r = await api("GET", "/ui/api/requests/" + encodeURIComponent(id));
  } catch (e) {
    flash(e.message);
    return;
  }
  if (location.pathname !== "/ui/requests/" + id) return;
  renderRequest(r);
  if (r.state === "queued" || r.state === "running") {
    state.poll = setTimeout(() => refresh(id), 1000);
  }
}

// loadRequestView opens a request's view afresh.
async function loadRequestView(id) {
  $("req-cert").dataset.id = "";
  $("req-cert").hidden = true;
  $("req-preview").hidden = true;
  $("preview-btn").hidden = true;
  $("req-details").replaceChildren();
  $("progress").replaceChildren();
  $("req-id").textContent = id;
  await refresh(id);
}

$("preview-btn").addEventListener("click", async () => {
  const id = $("req-id").textContent;
  flash("");
  try {
    const pv = await api("POST", "/ui/api/requests/" + encodeURIComponent(id) + "/preview", {});
    state.preview = { id, ...pv };
    await refresh(id);
  } catch (e) {
    flash(e.message);
  }
});

$("confirm").addEventListener("click", async () => {
  const id = $("req-id").textContent;
  const pv = state.preview;
  if (!pv || pv.id !== id) return;
  flash("");
  $("confirm").disabled = true;
  try {
    await api("POST", "/ui/api/requests/" + encodeURIComponent(id) + "/confirm", { confirmation: pv.confirmation });
    state.preview = null;
    await refresh(id);
  } catch (e) {
    flash(e.message);
  } finally {
    $("confirm").disabled = false;
  }
});

// ---- verify ----

async function loadKeys() {
  if (!state.keys) {
    const out = await api("GET", "/ui/api/keys");
    state.keys = out.keys || [];
  }
  if (!$("pubkey").value && state.keys.length) $("pubkey").value = state.keys[0].pem;
  return state.keys;
}

// keyFor picks the installation's key the bundle names, else the first.
async function keyFor(text) {
  const keys = await loadKeys();
  let kid = "";
  try {
    kid = JSON.parse(text).dsseEnvelope.signatures[0].keyid;
  } catch {
    // the check reports the form
  }
  const k = keys.find((x) => x.key_id === kid) || keys[0];
  return k ? k.pem : "";
}

function renderVerdict(res) {
  const box = el("div", { class: "verdict-box " + (res.valid ? "valid" : "invalid") });
  box.append(el("p", { class: "verdict-big", text: res.valid ? "VALID" : `INVALID — ${res.failed}` }));
  if (!res.valid) {
    const f = res.checks.find((c) => !c.ok);
    box.append(el("p", { class: "verdict-reason", text: `The ${f.name} check failed: ${f.detail}` }));
  } else {
    box.append(el("p", { text: `Certificate ${res.certificateId}, entry ${res.logIndex} of the transparency log, signed by ${res.keyId}. Checked in this browser.` }));
  }
  box.append(el("ul", { class: "checks" }, res.checks.map((c) =>
    el("li", { class: c.ok ? "good" : "bad", "data-check": c.name }, el("strong", { text: (c.ok ? "✓ " : "✗ ") + c.name }), " — ", c.detail))));
  return box;
}

$("verify-here").addEventListener("click", async () => {
  const text = state.bundleText;
  const pem = await keyFor(text).catch(() => "");
  const res = await verifyBundle(text, pem, (state.keys || []).map((k) => k.pem));
  $("req-verify-result").replaceChildren(renderVerdict(res));
  $("req-words").replaceChildren(renderWords(statementOf(text), res.valid));
});

$("verify-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  flash("");
  const file = $("bundle-file").files[0];
  if (!file) {
    flash("Choose a certificate file.");
    return;
  }
  const text = await file.text();
  // The installation's own keys: the one the file names; a pasted key: that one.
  let pem = $("pubkey").value;
  const own = (state.keys || []).some((k) => k.pem.trim() === pem.trim());
  if (!pem.trim() || own) pem = await keyFor(text).catch(() => "");
  // A pasted key is the only one trusted; the installation's keys otherwise.
  const res = await verifyBundle(text, pem, own || !$("pubkey").value.trim() ? (state.keys || []).map((k) => k.pem) : []);
  $("verify-result").replaceChildren(renderVerdict(res));
  const st = statementOf(text);
  $("verify-words").replaceChildren(st ? renderWords(st, res.valid) : "");
});

// ---- start ----

(async () => {
  try {
    signedIn(await api("GET", "/ui/api/session"));
  } catch {
    showLogin();
  }
})();
