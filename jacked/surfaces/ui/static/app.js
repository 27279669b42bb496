/* jacked ui — plain JS, no build step, no library. Routes live in the URL hash:
 *   #/sessions?q=&repo=&since=&until=&types=   the list (and search)
 *   #/session/<id>                             one session as a timeline
 *   #/stats?repo=&since=                       charts drawn as inline SVG
 *   #/compose                                  the retrieve composer
 * Every text from a transcript goes into the page through textContent (never innerHTML):
 * transcripts hold arbitrary HTML-looking text. */
"use strict";

const app = document.getElementById("app");
const TOKEN = new URLSearchParams(location.search).get("token");
const SVG_NS = "http://www.w3.org/2000/svg";
let HEALTH = null;

/* ------------------------------------------------------------------ helpers */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "text") el.textContent = v; else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (TOKEN) headers["X-Jacked-Token"] = TOKEN;
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || (opts.body !== undefined ? "POST" : "GET"), headers,
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined, credentials: "same-origin",
  });
  let data = null;
  try { data = await res.json(); } catch (e) { data = { error: `bad answer from the server (${res.status})` }; }
  if (!res.ok) throw new Error((data && data.error) || `HTTP ${res.status}`);
  return data;
}

const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
function oneLine(t, n = 160) { const x = String(t || "").replace(/\s+/g, " ").trim(); return x.length > n ? x.slice(0, n - 1) + "…" : x; }
function dur(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  const sec = ms / 1000;
  if (sec < 90) return `${sec.toFixed(1)} s`;
  const m = Math.floor(sec / 60);
  return m < 90 ? `${m} min ${Math.round(sec % 60)} s` : `${(m / 60).toFixed(1)} h`;
}
function shortTime(ts) { return ts ? ts.replace("T", " ").slice(0, 16) : ""; }
function routeParams() {
  const hash = location.hash.slice(1) || "/sessions";
  const [path, qs] = hash.split("?");
  return { path, params: new URLSearchParams(qs || "") };
}
function setRoute(path, params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v) qs.set(k, v);
  const str = qs.toString();
  const next = "#" + path + (str ? "?" + str : "");
  if (location.hash !== next) history.replaceState(null, "", location.pathname + location.search + next);
}
function debounce(fn, ms) { let t = null; return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); }; }
function showError(where, err) { where.replaceChildren(h("div", { class: "error-box", text: String(err.message || err) })); }

/* ------------------------------------------------------------------ basket (composer selection) */
const BASKET_KEY = "jacked.basket";
function basket() { try { return JSON.parse(localStorage.getItem(BASKET_KEY) || "[]"); } catch (e) { return []; } }
function saveBasket(items) {
  localStorage.setItem(BASKET_KEY, JSON.stringify(items));
  document.getElementById("basket-count").textContent = String(items.length);
}
function inBasket(id) { return basket().some((b) => b.session_id === id); }
function toggleBasket(row) {
  const items = basket();
  const i = items.findIndex((b) => b.session_id === row.session_id);
  if (i >= 0) items.splice(i, 1);
  else items.push({ session_id: row.session_id, label: row.title || oneLine(row.first_prompt, 80) || row.session_id, repo_name: row.repo_name });
  saveBasket(items);
  return i < 0;
}

/* ------------------------------------------------------------------ sessions page */
async function viewSessions(params) {
  const state = { q: params.get("q") || "", repo: params.get("repo") || "", since: params.get("since") || "",
    until: params.get("until") || "", agent: params.get("agent") || "",
    types: (params.get("types") || "").split(",").filter(Boolean), offset: 0 };
  const repoSel = h("select", { "aria-label": "repo", onchange: () => { state.repo = repoSel.value; reload(); } },
    h("option", { value: "", text: "all repos" }));
  // Coding agents with sessions (Claude Code, Codex CLI, Gemini CLI, opencode): from /api/health.
  const agentSel = h("select", { "aria-label": "agent", onchange: () => { state.agent = agentSel.value; reload(); } },
    h("option", { value: "", text: "all agents" }),
    ((HEALTH && HEALTH.agents) || []).filter((a) => a.sessions).map((a) =>
      h("option", { value: a.name, text: `${a.label} (${a.sessions})` })));
  agentSel.value = state.agent;
  const q = h("input", { type: "search", placeholder: "Search sessions (hybrid search when indexed)…", value: state.q,
    "aria-label": "search" });
  q.addEventListener("input", debounce(() => { state.q = q.value.trim(); reload(); }, 350));
  const since = h("input", { type: "date", value: state.since, "aria-label": "since", title: "started on or after" });
  const until = h("input", { type: "date", value: state.until, "aria-label": "until", title: "started on or before" });
  since.addEventListener("change", () => { state.since = since.value; reload(); });
  until.addEventListener("change", () => { state.until = until.value; reload(); });
  const typeBoxes = (HEALTH ? HEALTH.content_types : []).map((t) => {
    const cb = h("input", { type: "checkbox", value: t, checked: state.types.includes(t) });
    cb.addEventListener("change", () => { state.types = typeBoxes.filter((x) => x.checked).map((x) => x.value); updateTypes(); reload(); });
    return cb;
  });
  const typesSummary = h("summary", {});
  const updateTypes = () => { typesSummary.textContent = state.types.length ? `types: ${state.types.join(", ")}` : "all content types"; };
  updateTypes();
  const typesBox = h("details", { class: "types" }, typesSummary,
    h("div", {}, typeBoxes.map((cb) => h("label", {}, cb, " ", cb.value))));
  const note = h("div", {});
  const body = h("tbody", {});
  const more = h("button", { type: "button", hidden: true, onclick: () => load(true) }, "More");
  const count = h("span", { class: "muted small" });
  app.replaceChildren(
    h("h1", {}, "Sessions ", count),
    h("div", { class: "filters" }, q, typesBox, repoSel, agentSel, h("label", { class: "small muted" }, "from ", since),
      h("label", { class: "small muted" }, "to ", until)),
    note,
    h("table", { class: "list" },
      h("thead", {}, h("tr", {}, h("th", { title: "add to the composer" }, "ctx"), h("th", {}, "Session"), h("th", {}, "Agent"),
        h("th", {}, "Repo"),
        h("th", {}, "Age"), h("th", { class: "num" }, "Turns"), h("th", { class: "num" }, "Tool calls"),
        h("th", { class: "num" }, "Errors"))),
      body),
    h("p", {}, more));

  api("/api/repos").then((d) => {
    for (const r of d.repos) repoSel.append(h("option", { value: r.repo_name, text: `${r.repo_name} (${r.sessions})` }));
    repoSel.value = state.repo;
  }).catch(() => {});

  let seq = 0;
  function reload() {
    state.offset = 0;
    setRoute("/sessions", { q: state.q, repo: state.repo, agent: state.agent, since: state.since, until: state.until,
      types: state.types.join(",") });
    load(false);
  }
  async function load(append) {
    const my = ++seq;
    const qs = new URLSearchParams({ limit: "50", offset: String(append ? state.offset : 0) });
    for (const k of ["q", "repo", "agent", "since", "until"]) if (state[k]) qs.set(k, state[k]);
    if (state.types.length) qs.set("types", state.types.join(","));
    let d;
    try { d = await api("/api/sessions?" + qs); } catch (e) { if (my === seq) showError(note, e); return; }
    if (my !== seq) return; // a newer query has started: drop this answer
    note.replaceChildren();
    if (d.search && d.search.note) note.append(h("div", { class: "notice", text: d.search.note }));
    // As `jacked search` does: a weak answer says so, before its closest sessions.
    if (d.search && (d.search.confidence === "low" || d.search.confidence === "none") && d.sessions.length)
      note.append(h("div", { class: "notice weak", text: "nothing matched well: these are the closest sessions, likely not the one you mean" }));
    if (!append) body.replaceChildren();
    for (const r of d.sessions) body.append(sessionRow(r));
    state.offset = d.offset + d.sessions.length;
    count.textContent = d.search ? `${fmt(d.total)} matching` + (d.search.confidence ? ` · confidence ${d.search.confidence}` : "")
      : `${fmt(d.total)} in the catalog`;
    more.hidden = state.offset >= d.total;
    if (!d.sessions.length && !append) body.append(h("tr", {}, h("td", { colspan: 8, class: "muted", text: "no sessions match" })));
  }
  load(false);
}

function agentLabel(name) {
  const a = ((HEALTH && HEALTH.agents) || []).find((x) => x.name === (name || "claude"));
  return a ? a.label : (name || "Claude Code");
}

function sessionRow(r) {
  const cb = h("input", { type: "checkbox", checked: inBasket(r.session_id), title: "add to the retrieve composer",
    onchange: () => { cb.checked = toggleBasket(r); } });
  const label = r.title || oneLine(r.first_prompt, 140) || "(no prompt)";
  const cell = h("td", {}, h("a", { class: "label", href: `#/session/${r.session_id}`, text: label }), sourceBadge(r.source),
    r.confidence ? h("span", { class: `badge conf conf-${r.confidence}`, title: "how well this session matched the search",
      text: `${r.confidence} confidence` }) : null,
    h("div", { class: "small muted" }, r.short_id || r.session_id.slice(0, 8), r.git_branch ? ` · ${r.git_branch}` : ""));
  for (const m of r.matches || []) cell.append(h("div", { class: "match" }, h("span", { class: "ctype", text: m.content_type }), oneLine(m.text, 200)));
  return h("tr", { dataset: { sessionId: r.session_id } }, h("td", {}, cb), cell,
    h("td", { class: "small", text: agentLabel(r.agent) }), h("td", { text: r.repo_name || "–" }),
    h("td", { class: "small", title: r.started_at || "", text: r.age || "" }), h("td", { class: "num", text: fmt(r.turn_count) }),
    h("td", { class: "num", text: fmt(r.tool_call_count) }),
    h("td", { class: "num" + (r.tool_error_count ? " errcount" : ""), text: fmt(r.tool_error_count) }));
}

// Sessions whose transcript is gone: "archived" (jacked's archive has it), "prompts only" (history.jsonl).
const SOURCE_BADGES = {
  archive: ["archived", "Claude Code deleted the transcript: read from jacked's archive"],
  history: ["prompts only", "the transcript was deleted before jacked saw it: only the prompts, from history.jsonl"],
};
function sourceBadge(source) {
  const b = SOURCE_BADGES[source];
  return b ? h("span", { class: `badge src-${source}`, title: b[1], text: b[0] }) : null;
}

/* ------------------------------------------------------------------ session page */
async function viewSession(id) {
  app.replaceChildren(h("p", { class: "muted", text: "loading…" }));
  let d;
  try { d = await api(`/api/sessions/${encodeURIComponent(id)}`); } catch (e) { showError(app, e); return; }
  const ss = d.session;
  const subsByCall = {};
  for (const a of d.subagents) if (a.tool_use_id) subsByCall[a.tool_use_id] = a;
  const errByCall = {};
  for (const e of d.errors || []) errByCall[e.tool_use_id] = e;
  const filesByTurn = {};
  for (const f of d.files || []) (filesByTurn[f.turn_index] = filesByTurn[f.turn_index] || []).push(f);
  const textsByTurn = {}; const headTexts = [];
  for (const x of d.texts) {
    // Labels and titles describe the session; compaction summaries and recaps sit in their turn.
    if (x.turn_index === null || x.turn_index === undefined || x.kind === "summary_label" || x.kind === "title") headTexts.push(x);
    else (textsByTurn[x.turn_index] = textsByTurn[x.turn_index] || []).push(x);
  }
  const compByTurn = {};
  for (const c of d.compactions || []) (compByTurn[c.turn_index] = compByTurn[c.turn_index] || []).push(c);

  const addBtn = h("button", { type: "button" });
  const setAdd = () => { addBtn.textContent = inBasket(ss.session_id) ? "✓ in composer" : "+ add to composer"; };
  addBtn.addEventListener("click", () => { toggleBasket(ss); setAdd(); });
  setAdd();
  const batches = d.turns.reduce((n, t) => n + Object.values(groupBySeq(t.invocations)).filter((g) => g.length > 1).length, 0);
  const head = h("div", { class: "panel" },
    h("h1", { text: ss.title || oneLine(ss.first_prompt, 120) || "(untitled session)" }, " ", sourceBadge(ss.source)),
    SOURCE_BADGES[ss.source] ? h("div", { class: "notice", text: SOURCE_BADGES[ss.source][1] }) : null,
    h("div", { class: "meta" },
      h("span", { text: ss.session_id }), h("span", { text: agentLabel(ss.agent) }),
      h("span", { text: `repo ${ss.repo_name || "–"}` }),
      ss.cwd ? h("span", { text: ss.cwd }) : null, ss.git_branch ? h("span", { text: `branch ${ss.git_branch}` }) : null,
      h("span", { title: `${ss.started_at || "?"} → ${ss.ended_at || "?"}`, text: ss.age }),
      ss.version ? h("span", { text: `v${ss.version}` }) : null,
      h("span", { text: `${d.turns.length} turns` }), h("span", { text: `${fmt(ss.tool_call_count)} tool calls` }),
      h("span", { class: ss.tool_error_count ? "errcount" : "", text: `${fmt(ss.tool_error_count)} errors` }),
      h("span", { text: `${batches} parallel batches` }), h("span", { text: `${fmt(ss.subagent_count)} subagents` }),
      h("span", { title: "everything the session caused: subagents and compactions included",
        text: `tokens ${fmt(ss.tokens.input + ss.tokens.cache_creation + ss.tokens.cache_read)} in (${fmt(ss.tokens.cache_read)} cache reads) / ${fmt(ss.tokens.output)} out · ${usd(ss.cost_usd)}` })),
    h("div", { class: "row" }, addBtn, h("a", { href: `#/stats?session=${ss.session_id}` }, "stats of this session")));
  const parts = [head];
  if (headTexts.length) parts.push(h("div", { class: "panel texts" }, headTexts.map(placedText)));
  if (d.plan && (d.plan_turn === null || d.plan_turn === undefined)) parts.push(planBox(d.plan, d.plan_source));
  const timeline = h("div", { class: "timeline" });
  for (const t of d.turns) {
    timeline.append(turnBox(t, { subsByCall, errByCall, files: filesByTurn[t.index] || [], texts: textsByTurn[t.index] || [],
      comps: compByTurn[t.index] || [], plan: d.plan_turn === t.index ? d.plan : null, planSource: d.plan_source }));
  }
  parts.push(timeline);
  app.replaceChildren(...parts);
}

function groupBySeq(invs) {
  const g = {};
  for (const inv of invs) (g[inv.sequence] = g[inv.sequence] || []).push(inv);
  return g;
}

function placedText(x) {
  const names = { summary_label: "label", compact_summary: "compaction summary", recap: "recap", title: "title" };
  const long = (x.text || "").length > 400;
  const body = h("pre", { text: x.text || "" });
  return h("div", { class: "placed text-item", dataset: { kind: x.kind } },
    h("div", { class: "kind", text: names[x.kind] || x.kind }),
    long ? h("details", {}, h("summary", { text: oneLine(x.text, 200) }), body) : body);
}

function planBox(plan, source) {
  return h("div", { class: "placed plan", dataset: { kind: "plan" } },
    h("div", { class: "kind", text: `plan${source ? " (" + source + ")" : ""}` }),
    h("details", {}, h("summary", { text: oneLine(plan, 200) }), h("pre", { text: plan })));
}

function turnBox(t, ctx) {
  const m = t.metrics || {};
  const headBits = [h("span", { class: "idx", text: `#${t.index}` }), h("span", { class: "muted small", text: shortTime(t.started_at) })];
  if (t.duration_ms !== null && t.duration_ms !== undefined)
    headBits.push(h("span", { class: "small", title: t.duration_source || "", text: (t.duration_source === "timestamps" ? "~" : "") + dur(t.duration_ms) }));
  if (t.models && t.models.length) headBits.push(h("span", { class: "muted small", text: t.models.join(", ") }));
  if (t.interrupted) headBits.push(h("span", { class: "errcount small", text: "interrupted" }));
  if (t.compacted) headBits.push(h("span", { class: "small", text: "compacted" }));
  // Decisions and the user's feedback, visible at a glance in the turn's head (issue 16).
  const decisions = t.decisions || [], feedback = t.feedback || [];
  if (decisions.length) headBits.push(h("span", { class: "badge decision", text: `${decisions.length} decision${decisions.length > 1 ? "s" : ""}` }));
  if (feedback.length) headBits.push(h("span", { class: "badge feedback", text: `${feedback.length} feedback` }));
  if (t.snapshot && (t.snapshot.git_branch || t.snapshot.permission_mode))
    headBits.push(h("span", { class: "muted small", title: "the state the turn started from",
      text: [t.snapshot.git_branch, t.snapshot.permission_mode].filter(Boolean).join(" · ") }));
  const box = h("section", { class: "turn", id: `turn-${t.index}`, dataset: { turnIndex: t.index } }, h("div", { class: "turn-head" }, headBits));
  box.append(h("div", { class: "prompt" }, h("pre", { text: t.prompt === null ? "(assistant lines before the first prompt)" : t.prompt })));
  // the file or selection open in the IDE when the prompt was sent
  for (const c of t.context || []) box.append(h("div", { class: "muted small", title: c.text, text: "IDE: " + c.text.split("\n")[0].slice(0, 160) }));
  for (const c of ctx.comps) box.append(h("div", { class: "placed compaction", dataset: { kind: "compaction" } },
    h("div", { class: "kind", text: "compaction" }),
    h("span", { class: "small", text: [c.trigger, c.pre_tokens ? `${fmt(c.pre_tokens)} tokens before` : "", shortTime(c.timestamp)].filter(Boolean).join(" · ") })));
  if (ctx.plan) box.append(planBox(ctx.plan, ctx.planSource));
  for (const d of decisions) box.append(h("div", { class: "placed decision", dataset: { kind: "decision" } },
    h("div", { class: "kind", text: `decision · ${d.kind}` }), h("span", { text: d.text || "" })));
  for (const f of feedback) box.append(h("div", { class: "placed feedback", dataset: { kind: "feedback" } },
    h("div", { class: "kind", text: `feedback · ${(f.kind || "").replace("_", " ")}${f.tool_name ? " · " + f.tool_name : ""}` }),
    h("span", { text: f.text || f.reason || "" })));
  const seqs = h("div", { class: "seqs" });
  const groups = groupBySeq(t.invocations);
  for (const key of Object.keys(groups).map(Number).sort((a, b) => a - b)) {
    const invs = groups[key];
    const parallel = invs.length > 1;
    const row = h("div", { class: "seq" + (parallel ? " batch" : ""), dataset: parallel ? { sequence: key, parallelBatch: invs.length } : { sequence: key } },
      h("div", { class: "seqno", title: "sequence (API response) in this turn", text: String(key) }),
      h("div", { class: "calls" }, invs.map((inv) => callBox(inv, ctx))));
    if (parallel) row.append(h("span", { class: "batch-tag", title: "calls sent together in one response", text: `∥ ×${invs.length}` }));
    seqs.append(row);
  }
  if (t.invocations.length) box.append(seqs);
  for (const x of ctx.texts) box.append(placedText(x));
  if (t.assistant_text) {
    const long = t.assistant_text.length > 500;
    box.append(h("div", { class: "answer" }, long
      ? h("details", {}, h("summary", { class: "small", text: oneLine(t.assistant_text, 220) }), h("pre", { text: t.assistant_text }))
      : h("pre", { text: t.assistant_text })));
  }
  const tokensIn = (m.input_tokens || 0) + (m.cache_read_tokens || 0) + (m.cache_creation_tokens || 0);
  const bits = [["calls", m.tool_call_count], ["errors", m.tool_error_count], ["API calls", m.api_calls],
    ["tokens in", tokensIn], ["out", m.output_tokens], ["read", (m.files_read || []).length],
    ["written", (m.files_written || []).length], ["edited", (m.files_modified || []).length],
    ["lines", m.lines_added || m.lines_removed ? `+${m.lines_added || 0}/−${m.lines_removed || 0}` : null],
    ["bash", (m.bash_commands || []).length ? `${m.bash_commands.length} (${m.bash_error_count || 0} failed)` : null]];
  box.append(h("div", { class: "metrics" }, bits.filter(([, v]) => v !== null && v !== undefined && v !== 0)
    .map(([k, v]) => h("span", {}, h("b", { text: typeof v === "number" ? fmt(v) : v }), " ", k))));
  if (ctx.files.length) {
    box.append(h("div", { class: "files" }, h("div", { class: "small muted", text: "files touched" }),
      ctx.files.map((f) => h("details", {},
        h("summary", {}, `${f.operation} ${f.path} `, h("span", { class: "add", text: `+${f.lines_added || 0}` }), " ",
          h("span", { class: "del", text: `−${f.lines_removed || 0}` })),
        f.diff ? diffView(f.diff) : h("div", { class: "small muted", text: "no diff recorded" })))));
  }
  return box;
}

function diffView(text) {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
    pre.append(h("span", { class: cls, text: line || " " }));
  }
  return pre;
}

/* What a call acted on, in a few words: its command or file, else the most telling field of
 * its input (a search pattern, a URL, a task's subject, an agent's description). */
const TARGET_KEYS = ["description", "subject", "pattern", "query", "url", "path", "taskId", "to", "prompt", "skill"];
function callTarget(inv) {
  if (inv.command || inv.file_path) return inv.command || inv.file_path;
  try {
    const o = JSON.parse(inv.input || "");
    if (o && typeof o === "object") {
      for (const k of TARGET_KEYS) if (typeof o[k] === "string" && o[k]) return oneLine(o[k], 120);
      for (const v of Object.values(o)) if (typeof v === "string" && v) return oneLine(v, 120);
    }
  } catch (e) { /* a cut-short brief is not JSON: show it as it is */ }
  return oneLine(inv.input, 120);
}

/* A file path as two spans: the folders, cut with an ellipsis when the box is narrow, and the
 * parent folder with the file name, always shown — in a batch of parallel Reads every path would
 * otherwise read as the same "/home/…". */
function pathTarget(path) {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  const parent = cut > 0 ? Math.max(path.lastIndexOf("/", cut - 1), path.lastIndexOf("\\", cut - 1)) : -1;
  const at = parent >= 0 ? parent + 1 : cut + 1;
  return h("span", { class: "target path", title: path },
    h("span", { class: "head", text: path.slice(0, at) }), h("span", { class: "tail", text: path.slice(at) }));
}

function callBox(inv, ctx) {
  const target = callTarget(inv);
  const err = ctx.errByCall[inv.tool_use_id];
  const summary = h("summary", {}, h("span", { class: "tool", text: inv.tool_name }),
    inv.is_error ? h("span", { class: "x", title: "error", text: "✗" }) : null,
    inv.file_path && !inv.command ? pathTarget(inv.file_path)
      : h("span", { class: "target", title: target || "", text: target || "" }),
    h("span", { class: "dur", text: dur(inv.duration_ms) }));
  const det = h("details", {}, summary);
  if (inv.input) det.append(h("div", { class: "small muted", text: "input" }), h("pre", { text: inv.input }));
  if (inv.result) det.append(h("div", { class: "small muted", text: "result" }), h("pre", { text: inv.result }));
  const box = h("div", { class: "call" + (inv.is_error ? " error" : ""), dataset: { tool: inv.tool_name, group: inv.parallel_group } }, det);
  if (inv.is_error) {
    box.append(h("div", { class: "errmsg", title: inv.result || "", text: oneLine(inv.result, 140) }));
    if (err && err.resolved) box.append(h("div", { class: "fixed", text: "✓ fixed later in the session" }));
  }
  const sub = ctx.subsByCall[inv.tool_use_id];
  if (sub) box.append(subagentBox(sub));
  return box;
}

function subagentBox(a) {
  const det = h("details", { class: "subagent" },
    h("summary", { text: `subagent ${a.agent_type || ""} · ${a.tool_call_count} calls${a.tool_error_count ? `, ${a.tool_error_count} failed` : ""}` }));
  if (a.description) det.append(h("div", { class: "small", text: a.description }));
  if (a.summary_text) det.append(h("div", { class: "small muted", text: "report" }), h("pre", { text: a.summary_text }));
  if (a.invocations && a.invocations.length) {
    det.append(h("ol", {}, a.invocations.map((i) => h("li", { class: i.is_error ? "errcount" : "" },
      h("b", { text: i.tool_name }), " ", oneLine(i.target, 100), i.is_error ? " ✗" : ""))));
  }
  return det;
}

/* ------------------------------------------------------------------ stats page */
async function viewStats(params) {
  const state = { repo: params.get("repo") || "", since: params.get("since") || "", session: params.get("session") || "" };
  const repoSel = h("select", { "aria-label": "repo" }, h("option", { value: "", text: "all repos" }));
  const since = h("select", { "aria-label": "since" }, [["", "all time"], ["7d", "last 7 days"], ["30d", "last 30 days"],
    ["90d", "last 90 days"], ["1y", "last year"]].map(([v, t]) => h("option", { value: v, text: t })));
  since.value = state.since;
  const out = h("div", {});
  const head = h("div", { class: "filters" }, repoSel, since,
    state.session ? h("span", { class: "small" }, "session ", h("a", { href: `#/session/${state.session}`, text: state.session.slice(0, 8) }),
      " ", h("a", { href: "#/stats", text: "(all)" })) : null);
  app.replaceChildren(h("h1", { text: "Stats" }), head, out);
  api("/api/repos").then((d) => {
    for (const r of d.repos) repoSel.append(h("option", { value: r.repo_name, text: r.repo_name }));
    repoSel.value = state.repo;
  }).catch(() => {});
  const reload = async () => {
    setRoute("/stats", state);
    const qs = new URLSearchParams();
    for (const k of ["repo", "since", "session"]) if (state[k]) qs.set(k, state[k]);
    out.replaceChildren(h("p", { class: "muted", text: "loading…" }));
    let d;
    try { d = await api("/api/stats?" + qs); } catch (e) { showError(out, e); return; }
    renderStats(out, d);
  };
  repoSel.addEventListener("change", () => { state.repo = repoSel.value; reload(); });
  since.addEventListener("change", () => { state.since = since.value; reload(); });
  reload();
}

function renderStats(out, d) {
  const card = (v, k) => h("div", { class: "card" }, h("div", { class: "v", text: v }), h("div", { class: "k", text: k }));
  const errRate = d.tool_calls ? ((100 * d.tool_error_count) / d.tool_calls).toFixed(1) + "%" : "–";
  const cards = h("div", { class: "cards" }, card(fmt(d.sessions), "sessions"), card(fmt(d.turns), "turns"),
    card(fmt(d.tool_calls), "tool calls"), card(errRate, "tool error rate"), card(usd(d.tokens.cost_usd), "cost"),
    card(fmt(d.tokens.input + d.tokens.cache_creation + d.tokens.cache_read), "tokens in (with cache)"),
    card(fmt(d.tokens.output), "tokens out"), card(fmt(d.parallel.batches), "parallel batches"),
    card(d.time.turn_ms_median !== null ? dur(d.time.turn_ms_median) : "–", "median turn"));
  const tools = Object.entries(d.tool_usage).slice(0, 15);
  const series = buckets(d.over_time);
  // tokens and cost per response day, everything the sessions caused (subagents, compactions) as in the cards
  const costs = buckets((d.cost_over_time || []).map((x) => ({ day: x.day, cost: x.cost_usd_known,
    tin: x.tokens.input + x.tokens.cache_creation + x.tokens.cache_read, tout: x.tokens.output })), ["cost", "tin", "tout"]);
  const models = Object.entries(d.tokens.by_model || {});
  const charts = h("div", { class: "charts" },
    chartPanel("Tool usage", h("span", { class: "legend" }, h("i", { class: "c-in" }), "calls", h("i", { class: "c-err" }), "failed"),
      hbars(tools.map(([k, v]) => ({ label: k, value: v, part: d.tool_errors[k] || 0 })), (r) => `${fmt(r.value)} (${fmt(r.part)} failed)`)),
    chartPanel("Error rate by tool", null,
      hbars(tools.filter(([k]) => d.error_rates[k] > 0).map(([k]) => ({ label: k, value: d.error_rates[k], cls: "err" })),
        (r) => `${(r.value * 100).toFixed(1)}%`, 1)),
    chartPanel(`Cost per ${costs.unit} (USD)`, h("span", { class: "legend" }, d.tokens.unpriced_models.length ? `no price for ${d.tokens.unpriced_models.join(", ")}` : "subagents and compactions included"),
      vbars(costs.rows.map((x) => ({ label: x.label, value: Math.round(x.cost * 100) / 100 })))),
    chartPanel("Cost by model", null,
      hbars(models.map(([k, v]) => ({ label: k, value: v.cost_usd || 0, extra: v.cost_usd === null ? "unknown" : usd(v.cost_usd) })), (r) => r.extra)),
    chartPanel(`Turns per ${series.unit}`, null, vbars(series.rows.map((x) => ({ label: x.label, value: x.turns })))),
    chartPanel(`Tokens per ${costs.unit}`, h("span", { class: "legend" }, h("i", { class: "c-in" }), "in (with cache, left axis)", h("i", { class: "c-out" }), "out (right axis)"),
      lines(costs.rows.map((x) => x.label), [costs.rows.map((x) => x.tin), costs.rows.map((x) => x.tout)])),
    chartPanel(`Tool calls and errors per ${series.unit}`, h("span", { class: "legend" }, h("i", { class: "c-in" }), "calls", h("i", { class: "c-err" }), "failed"),
      vbars(series.rows.map((x) => ({ label: x.label, value: x.tool_calls, part: x.tool_errors })))),
    chartPanel("Common tool sequences within a turn", null,
      hbars(d.sequences.slice().sort((a, b) => b.count - a.count).slice(0, 12).map((x) => ({ label: x.tools.join(" → "), value: x.count })), (r) => fmt(r.value))),
    chartPanel("Files most edited", h("span", { class: "legend" }, "count · lines +/−"),
      hbars(d.files_edited.map((f) => ({ label: shortPath(f.path), title: f.path, value: f.count, extra: `+${f.lines_added}/−${f.lines_removed}` })),
        (r) => `${fmt(r.value)} · ${r.extra}`)),
    chartPanel("Parallel batch sizes", null,
      hbars(Object.entries(d.parallel.sizes).map(([k, v]) => ({ label: `${k} calls`, value: v, cls: "out" })), (r) => fmt(r.value))));
  out.replaceChildren(cards, charts);
}

function shortPath(p) { const parts = String(p).split(/[\\/]/); return parts.length > 2 ? "…/" + parts.slice(-2).join("/") : p; }
function compact(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return Math.round(n / 1e3) + "k";
  return fmt(n);
}

/* Per-day rows (only days with turns) → a continuous series: by day over up to 90 days, else by
 * week (Monday), so quiet days show as gaps instead of vanishing and a year stays readable. */
function usd(v) { return v === null || v === undefined ? "unknown" : "$" + v.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }); }

function buckets(days, keys = ["turns", "input_tokens", "output_tokens", "tool_calls", "tool_errors"]) {
  if (!days.length) return { unit: "day", rows: [] };
  const DAY = 86400000;
  const t0 = Date.parse(days[0].day + "T00:00:00Z"), t1 = Date.parse(days[days.length - 1].day + "T00:00:00Z");
  const weekly = (t1 - t0) / DAY > 90;
  const keyOf = (t) => {
    if (!weekly) return new Date(t).toISOString().slice(0, 10);
    const d = new Date(t); const dow = (d.getUTCDay() + 6) % 7;
    return new Date(t - dow * DAY).toISOString().slice(0, 10);
  };
  const rows = new Map();
  for (let t = Date.parse(keyOf(t0) + "T00:00:00Z"); t <= t1; t += weekly ? 7 * DAY : DAY)
    rows.set(keyOf(t), Object.fromEntries([["label", keyOf(t)], ...keys.map((k) => [k, 0])]));
  for (const x of days) {
    const r = rows.get(keyOf(Date.parse(x.day + "T00:00:00Z")));
    if (!r) continue;
    for (const k of keys) r[k] += x[k];
  }
  return { unit: weekly ? "week" : "day", rows: [...rows.values()] };
}

function chartPanel(title, legend, svg) {
  return h("div", { class: "panel chart" }, h("h2", {}, title, " ", legend), svg);
}

function empty(w, hgt) {
  return s("svg", { viewBox: `0 0 ${w} ${hgt}`, role: "img" }, s("text", { x: 10, y: 20, class: "dim", text: "no data" }));
}

/* Horizontal bars: one row per item; `part` (errors) drawn over the start of the bar. */
function hbars(rows, labelFn, maxValue) {
  const W = 560, rowH = 20, left = 190, right = 110;
  if (!rows.length) return empty(W, 30);
  const max = maxValue || Math.max(...rows.map((r) => r.value), 1);
  const H = rows.length * rowH + 6;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  rows.forEach((r, i) => {
    const y = i * rowH + 3;
    const w = Math.max(1, ((W - left - right) * r.value) / max);
    const label = r.label.length > 30 ? (r.title ? "…" + r.label.slice(-29) : r.label.slice(0, 29) + "…") : r.label;
    svg.append(s("text", { x: left - 6, y: y + 13, "text-anchor": "end" }, s("title", { text: r.title || r.label }), document.createTextNode(label)));
    svg.append(s("rect", { x: left, y, width: w, height: rowH - 6, rx: 2, class: "bar" + (r.cls ? " " + r.cls : "") }));
    if (r.part) svg.append(s("rect", { x: left, y, width: Math.max(1, ((W - left - right) * r.part) / max), height: rowH - 6, rx: 2, class: "bar err" }));
    svg.append(s("text", { x: left + w + 5, y: y + 12, class: "dim", text: labelFn(r) }));
  });
  return svg;
}

/* Vertical bars over days, with sparse date labels. */
function vbars(rows) {
  const W = 560, H = 200, pad = 30, bottom = 36;
  if (!rows.length) return empty(W, 30);
  const max = Math.max(...rows.map((r) => r.value), 1);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const bw = (W - pad * 2) / rows.length;
  svg.append(s("line", { x1: pad, y1: H - bottom, x2: W - pad, y2: H - bottom, class: "axis" }));
  svg.append(s("text", { x: pad - 4, y: 12, "text-anchor": "end", class: "dim", text: compact(max) }));
  const every = Math.ceil(rows.length / 6);
  rows.forEach((r, i) => {
    const bh = ((H - bottom - 16) * r.value) / max;
    const x = pad + i * bw;
    const bar = s("rect", { x: x + bw * 0.1, y: H - bottom - bh, width: Math.max(1, bw * 0.8), height: bh, class: "bar" });
    bar.append(s("title", { text: `${r.label}: ${fmt(r.value)}${r.part ? ` (${fmt(r.part)} failed)` : ""}` }));
    svg.append(bar);
    if (r.part) {
      const ph = ((H - bottom - 16) * r.part) / max;
      svg.append(s("rect", { x: x + bw * 0.1, y: H - bottom - ph, width: Math.max(1, bw * 0.8), height: ph, class: "bar err" }));
    }
    if (i % every === 0) svg.append(s("text", { x: x + bw / 2, y: H - bottom + 14, "text-anchor": "middle", class: "dim", text: r.label.slice(5) }));
  });
  svg.append(s("text", { x: pad, y: H - 4, class: "dim", text: `${rows[0].label} → ${rows[rows.length - 1].label}` }));
  return svg;
}

/* Line chart of two series over the same buckets, each on its own scale (tokens in are
 * hundreds of times tokens out): the first on the left axis, the second on the right. */
function lines(labels, series) {
  const W = 560, H = 200, pad = 48, bottom = 36;
  if (!labels.length) return empty(W, 30);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  svg.append(s("line", { x1: pad, y1: H - bottom, x2: W - pad, y2: H - bottom, class: "axis" }));
  const xAt = (i) => (labels.length === 1 ? W / 2 : pad + (i * (W - 2 * pad)) / (labels.length - 1));
  series.forEach((vals, k) => {
    const max = Math.max(...vals, 1);
    const yAt = (v) => H - bottom - ((H - bottom - 16) * v) / max;
    svg.append(s("text", { x: k ? W - pad + 4 : pad - 4, y: 12, "text-anchor": k ? "start" : "end", class: "dim", text: compact(max) }));
    const d = vals.map((v, i) => `${i ? "L" : "M"}${xAt(i).toFixed(1)},${yAt(v).toFixed(1)}`).join(" ");
    svg.append(s("path", { d, class: "line" + (k ? " out" : "") }));
    vals.forEach((v, i) => {
      if (!v) return;
      const c = s("circle", { cx: xAt(i), cy: yAt(v), r: 2.5, class: "bar" + (k ? " out" : "") });
      c.append(s("title", { text: `${labels[i]}: ${fmt(v)}` }));
      svg.append(c);
    });
  });
  const every = Math.ceil(labels.length / 6);
  labels.forEach((l, i) => { if (i % every === 0) svg.append(s("text", { x: xAt(i), y: H - bottom + 14, "text-anchor": "middle", class: "dim", text: l.slice(5) })); });
  svg.append(s("text", { x: pad, y: H - 4, class: "dim", text: `${labels[0]} → ${labels[labels.length - 1]}` }));
  return svg;
}

/* ------------------------------------------------------------------ composer */
async function viewCompose() {
  const modes = HEALTH ? HEALTH.retrieve_modes : ["smart", "plan", "labels", "agents", "full"];
  const budget0 = Number(localStorage.getItem("jacked.budget")) || (HEALTH ? HEALTH.default_max_tokens : 8000);
  const modeSel = h("select", { "aria-label": "mode" }, modes.map((m) => h("option", { value: m, text: m })));
  modeSel.value = localStorage.getItem("jacked.mode") || "smart";
  const budget = h("input", { type: "number", min: 100, step: 100, value: budget0, "aria-label": "budget", class: "budget" });
  const slider = h("input", { type: "range", min: 500, max: 64000, step: 500, value: budget0, "aria-label": "budget slider" });
  const picked = h("ul", { class: "picked" });
  const meterBar = h("div", {});
  const meter = h("div", { class: "meter" }, meterBar);
  const meterText = h("div", { class: "small" });
  const preview = h("pre", { class: "preview", text: "" });
  const left = h("ul", { class: "omitted" });
  const warn = h("div", {});
  const copyBtn = h("button", { type: "button", class: "primary", disabled: true }, "Copy context");
  const find = h("input", { type: "search", placeholder: "find sessions to add…", "aria-label": "find sessions" });
  const found = h("ul", { class: "picked" });
  find.addEventListener("input", debounce(async () => {
    const q = find.value.trim();
    const qs = new URLSearchParams({ limit: "8" });
    if (q) qs.set("q", q);
    try {
      const d = await api("/api/sessions?" + qs);
      found.replaceChildren(...d.sessions.map((r) => h("li", {},
        h("button", { type: "button", title: "add", onclick: () => { if (!inBasket(r.session_id)) toggleBasket(r); renderPicked(); update(); } }, "+"),
        h("span", { class: "grow", title: r.session_id, text: r.title || oneLine(r.first_prompt, 80) || r.session_id }),
        h("span", { class: "muted small", text: r.repo_name || "" }))));
    } catch (e) { showError(found, e); }
  }, 300));

  function renderPicked() {
    const items = basket();
    picked.replaceChildren(...items.map((b, i) => h("li", { dataset: { sessionId: b.session_id } },
      h("button", { type: "button", title: "move up", disabled: i === 0, onclick: () => { const x = basket(); [x[i - 1], x[i]] = [x[i], x[i - 1]]; saveBasket(x); renderPicked(); update(); } }, "↑"),
      h("a", { class: "grow", href: `#/session/${b.session_id}`, title: b.session_id, text: b.label }),
      h("span", { class: "muted small", text: b.repo_name || "" }),
      h("button", { type: "button", title: "remove", onclick: () => { toggleBasket(b); renderPicked(); update(); } }, "×"))));
    if (!items.length) picked.append(h("li", { class: "muted", text: "no sessions picked: tick them in the list or add them below" }));
  }

  let seq = 0;
  let lastText = "";
  const update = debounce(async () => {
    const items = basket();
    const b = Math.max(100, Number(budget.value) || 100);
    localStorage.setItem("jacked.budget", String(b));
    localStorage.setItem("jacked.mode", modeSel.value);
    if (!items.length) {
      preview.textContent = ""; left.replaceChildren(); meterBar.style.width = "0%"; meterText.textContent = ""; copyBtn.disabled = true; return;
    }
    const my = ++seq;
    meterText.textContent = "counting…";
    let d;
    try { d = await api("/api/retrieve", { body: { session_ids: items.map((x) => x.session_id), mode: modeSel.value, budget: b } }); }
    catch (e) { if (my === seq) { showError(warn, e); meterText.textContent = ""; } return; }
    if (my !== seq) return;
    warn.replaceChildren(...(d.warnings || []).map((w) => h("div", { class: "notice", text: w })));
    const pct = Math.min(100, (100 * d.used) / d.budget);
    meterBar.style.width = pct.toFixed(1) + "%";
    meter.classList.toggle("high", pct > 90);
    meterText.textContent = `${fmt(d.used)} of ${fmt(d.budget)} tokens used · ${fmt(d.remaining)} left · ` +
      `mode ${d.mode} · safety margin ${Math.round(d.safety_margin * 100)}% (Claude's tokenizer differs from cl100k)`;
    preview.textContent = d.text;
    lastText = d.text;
    copyBtn.disabled = !d.text;
    const rows = [];
    for (const x of d.dropped || []) rows.push(h("li", {}, h("b", { text: x.session_id.slice(0, 8) }), ` whole session left out: ${x.reason}`));
    for (const o of d.omitted) rows.push(h("li", {}, h("span", { class: "ctype", text: o.content_type }),
      `${o.session_id.slice(0, 8)}${o.turn_index !== null && o.turn_index !== undefined ? " #" + o.turn_index : ""}: ${o.reason}`));
    left.replaceChildren(...(rows.length ? rows : [h("li", { class: "muted", text: "nothing left out" })]));
  }, 250);

  budget.addEventListener("input", () => { slider.value = budget.value; update(); });
  slider.addEventListener("input", () => { budget.value = slider.value; update(); });
  modeSel.addEventListener("change", update);
  copyBtn.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(lastText); }
    catch (e) { // not a secure context (a non-local host over http): the old way
      const ta = h("textarea", {}); ta.value = lastText; document.body.append(ta); ta.select(); document.execCommand("copy"); ta.remove();
    }
    copyBtn.textContent = "Copied ✓";
    setTimeout(() => { copyBtn.textContent = "Copy context"; }, 1500);
  });

  app.replaceChildren(h("h1", { text: "Retrieve composer" }),
    h("p", { class: "muted small", text: "Exactly what `jacked retrieve` returns for these sessions, in this order, mode and budget." }),
    h("div", { class: "compose" },
      h("div", {},
        h("div", { class: "panel" }, h("h2", { text: "Sessions" }), picked),
        h("div", { class: "panel" }, h("h2", { text: "Add sessions" }), find, found)),
      h("div", {},
        h("div", { class: "panel" },
          h("div", { class: "row" }, h("label", {}, "mode ", modeSel), h("label", {}, "budget ", budget), slider),
          meter, meterText, warn, h("div", { class: "row" }, copyBtn)),
        h("div", { class: "panel" }, h("h2", { text: "Left out" }), left),
        h("div", { class: "panel" }, h("h2", { text: "Preview" }), preview))));
  renderPicked();
  update();
}

/* ------------------------------------------------------------------ shell */
async function route() {
  const { path, params } = routeParams();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", path.startsWith("/" + a.dataset.nav));
  window.scrollTo(0, 0);
  if (path.startsWith("/session/")) return viewSession(decodeURIComponent(path.slice("/session/".length)));
  if (path.startsWith("/stats")) return viewStats(params);
  if (path.startsWith("/compose")) return viewCompose();
  return viewSessions(params);
}

async function refreshHealth() {
  try {
    HEALTH = await api("/api/health");
    document.getElementById("status").textContent =
      `${fmt(HEALTH.sessions)} sessions · ${fmt(HEALTH.turns)} turns · ${HEALTH.index ? "index ready" : "no index (run jacked backfill)"}`;
  } catch (e) {
    document.getElementById("status").textContent = String(e.message || e);
  }
}

document.getElementById("rescan").addEventListener("click", async (ev) => {
  const btn = ev.currentTarget;
  btn.disabled = true; btn.textContent = "Scanning…";
  try { await api("/api/scan", { body: {} }); await refreshHealth(); route(); }
  catch (e) { document.getElementById("status").textContent = String(e.message || e); }
  finally { btn.disabled = false; btn.textContent = "Rescan"; }
});
window.addEventListener("hashchange", route);
saveBasket(basket());
refreshHealth().then(route);
