// yieldmcp dev: the page. Every string a server, a tool or a model sent is
// shown with textContent (never innerHTML); the DOM is built node by node.
"use strict";

const KINDS = ["sample", "elicit", "elicit_url", "step", "log", "progress"];
// Characters of one text the page shows: the rest is counted, and the whole
// is a download. A browser lays out a long word slowly (100 KB: seconds).
const MAX_SHOWN = 4096;
const state = { tools: [], runs: new Map(), selected: null, current: null, models: ["offline"] };

// Bidirectional embeddings, overrides and isolates draw text in another
// order than it reads ("invoice\u202egnp.exe" as "invoiceexe.png"): not
// drawn, as the terminal does not (bridge/elicit/_printable.py).
const BIDI = /[\u202a-\u202e\u2066-\u2069]/g;

// Characters are counted as the terminal counts them (code points, not
// UTF-16 units), so a cut never splits an emoji into a lone surrogate.
function characters(s) {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n--; i++; }
    }
  }
  return n;
}

function tooLong(text) {
  const s = String(text).replace(BIDI, "");
  return s.length > MAX_SHOWN && characters(s) > MAX_SHOWN;
}

function cut(text) {
  const s = String(text).replace(BIDI, "");
  if (!tooLong(s)) return s;
  // MAX_SHOWN characters lie within the first 2 * MAX_SHOWN units.
  const head = Array.from(s.slice(0, 2 * MAX_SHOWN)).slice(0, MAX_SHOWN).join("");
  return `${head}… (${(characters(s) - MAX_SHOWN).toLocaleString("en-US")} more characters)`;
}

function download(text, name) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  const link = el("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// A button that downloads the whole of a text the page cut, else nothing.
function whole(text, name) {
  if (!tooLong(text)) return null;
  return el("button", { class: "whole", testid: "whole", text: "download the whole", onclick: () => download(String(text), name) });
}

// Shows text in node after prefix (cut, with a button for the whole text
// when it is long).
function show(node, prefix, text, name) {
  node.textContent = prefix + cut(text);
  const button = whole(text, name);
  if (button) node.append(" ", button);
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "testid") node.dataset.testid = value;
    else if (name === "text") node.textContent = cut(value);
    else if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, name === "title" ? cut(value) : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
const $ = (id) => document.getElementById(id);

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify(body), credentials: "same-origin",
  });
  if (!response.ok) throw new Error(await response.text());
  return response.json();
}

// --- schemas to forms ------------------------------------------------------------

function resolve(schema, root) {
  let s = schema || {};
  for (let i = 0; i < 8 && typeof s.$ref === "string"; i++) {
    const name = s.$ref.split("/").pop();
    const defs = (root && (root.$defs || root.definitions)) || {};
    s = Object.hasOwn(defs, name) ? defs[name] || {} : {};  // never a prototype's
  }
  const options = s.anyOf || s.oneOf;
  if (Array.isArray(options)) {
    const real = options.filter((o) => o && o.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], root), title: s.title, description: s.description, default: s.default };
  }
  return s;
}

function primitive(type) { return ["string", "number", "integer", "boolean"].includes(type); }

// One field: returns { node, read } where read() gives the value or undefined.
function field(prefix, name, schema, root, depth) {
  const s = resolve(schema, root);
  const id = `${prefix}${name}`;
  const title = s.title || name;
  const label = el("label", { class: "field" }, el("span", { text: title + " " }));
  if (s.description) label.append(el("span", { class: "description", text: s.description + " " }));
  let input, read;
  if (Array.isArray(s.enum)) {
    input = el("select", { testid: id });
    input.append(el("option", { value: "", text: "" }));
    s.enum.forEach((v, i) => input.append(el("option", { value: String(i), text: String(v) })));
    if (s.default !== undefined) input.value = String(s.enum.indexOf(s.default));
    read = () => (input.value === "" ? undefined : s.enum[Number(input.value)]);
  } else if (s.type === "boolean") {
    input = el("input", { type: "checkbox", testid: id });
    input.checked = s.default === true;
    read = () => input.checked;
  } else if (s.type === "integer" || s.type === "number") {
    input = el("input", { type: "number", testid: id, step: s.type === "integer" ? "1" : "any" });
    if (s.default !== undefined) input.value = String(s.default);
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (s.type === "string") {
    input = el("input", { type: "text", testid: id });
    // A default is shown without its bidi controls, as every text is, and
    // sent as it was given while it is left as shown.
    const shown = s.default === undefined ? undefined : String(s.default).replace(BIDI, "");
    if (shown !== undefined) input.value = shown;
    read = () => (input.value === "" ? undefined : input.value === shown ? String(s.default) : input.value);
  } else if (s.type === "array" && primitive(resolve(s.items, root).type)) {
    const itemType = resolve(s.items, root).type;
    input = el("textarea", { testid: id, rows: "3", placeholder: "one item per line" });
    read = () => {
      const lines = input.value.split("\n").filter((l) => l.trim() !== "");
      if (!lines.length) return undefined;
      if (itemType === "string") return lines;
      if (itemType === "boolean") return lines.map((l) => l.trim() === "true");
      return lines.map(Number);
    };
  } else if (s.type === "object" && s.properties && depth < 2) {
    const sub = objectForm(`${prefix}${name}.`, s, root, depth + 1);
    const set = el("fieldset", { testid: id }, el("legend", { text: title }), sub.node);
    return { node: set, read: sub.read };
  } else {
    input = el("textarea", { testid: id, rows: "3", placeholder: "JSON" });
    read = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  label.append(input);
  return { node: label, read };
}

function objectForm(prefix, schema, root, depth) {
  const s = resolve(schema, root);
  const node = el("div");
  const readers = [];
  for (const [name, sub] of Object.entries(s.properties || {})) {
    const made = field(prefix, name, sub, root, depth);
    node.append(made.node);
    readers.push([name, made.read]);  // the name as the schema spells it
  }
  const read = () => {
    const out = Object.create(null);  // so that "__proto__" is a key like any other
    for (const [name, r] of readers) { const v = r(); if (v !== undefined) out[name] = v; }
    return out;
  };
  return { node, read };
}

// --- the listing -----------------------------------------------------------------

function showListing(listing) {
  state.tools = listing.tools;
  const tools = $("tools");
  clear(tools);
  for (const tool of listing.tools) {
    tools.append(el("li", {},
      el("button", { testid: `tool-${tool.name}`, text: tool.name, onclick: () => selectTool(tool.name) }),
      el("div", { class: "description", text: tool.description || "" }, whole(tool.description || "", `${tool.name}.txt`))));
  }
  for (const [id, items] of [["resources", listing.resources], ["prompts", listing.prompts]]) {
    const list = $(id);
    clear(list);
    for (const item of items) {
      list.append(el("li", {}, el("b", { text: item.name }),
        el("div", { class: "description", text: [item.uri, item.description].filter(Boolean).join(" — ") })));
    }
  }
  const notices = $("notices");
  clear(notices);
  for (const line of listing.notices || []) notices.append(el("span", { class: "notice", text: line }), el("br"));
  if (state.selected && !listing.tools.some((t) => t.name === state.selected)) clear($("form-area"));
  else if (state.selected) selectTool(state.selected);
}

function selectTool(name) {
  const tool = state.tools.find((t) => t.name === name);
  if (!tool) return;
  state.selected = name;
  const area = $("form-area");
  clear(area);
  const form = objectForm("arg-", tool.inputSchema, tool.inputSchema, 0);
  const error = el("p", { class: "notice" });
  const run = el("button", { testid: "run", text: "Run", onclick: async () => {
    error.textContent = "";
    let args;
    try { args = form.read(); } catch (e) { error.textContent = String(e); return; }
    startRun(name, args, $("era").value).catch((e) => { error.textContent = String(e); });
  } });
  const description = el("p", { class: "description", text: tool.description || "" }, whole(tool.description || "", `${tool.name}.txt`));
  area.append(el("h2", { text: tool.name }), description, form.node, run, error);
}

async function startRun(tool, args, era) {
  const made = await post("api/run", { tool, arguments: args, era });
  state.current = made.id;
  const known = state.runs.get(made.id);
  if (known) showRun(known);
}

// --- a run -------------------------------------------------------------------------

function showQuestion(run, q) {
  const box = el("div", { class: "question", testid: "question" });
  box.append(el("p", { text: q.kind === "sample" ? "The tool asks a model:" : "The tool asks:" }));
  box.append(el("pre", { testid: "question-message", text: q.message || "" }, whole(q.message || "", "message.txt")));
  const answer = (body) => post("api/answer", { question: q.id, ...body }).catch((e) => box.append(el("p", { class: "notice", text: String(e) })));
  if (q.kind === "elicit") {
    const schema = q.schema || {};
    const form = q.mode === "url" ? { node: el("p", { text: q.url || "" }), read: () => ({}) } : objectForm("answer-", schema, schema, 1);
    box.append(form.node,
      el("button", { testid: "accept", text: "Accept", onclick: () => answer({ action: "accept", content: form.read() }) }),
      el("button", { testid: "decline", text: "Decline", onclick: () => answer({ action: "decline" }) }),
      el("button", { testid: "cancel", text: "Cancel", onclick: () => answer({ action: "cancel" }) }));
  } else {
    const pick = el("select", { testid: "model" });
    for (const m of q.models || state.models) pick.append(el("option", { value: m, text: m }));
    const typed = el("textarea", { testid: "answer-text", rows: "3", placeholder: "or type the model's reply" });
    box.append(el("label", {}, el("span", { text: "model " }), pick),
      el("button", { testid: "accept", text: "Ask the model", onclick: () => answer({ action: "model", model: pick.value }) }),
      typed,
      el("button", { testid: "send-text", text: "Send this reply", onclick: () => answer({ action: "text", text: typed.value }) }));
  }
  return box;
}

function showPicture(picture) {
  const node = $("picture");
  clear(node);
  if (!picture) return;
  const bars = [...(picture.bars || []), ...(picture.wire || [])];
  const span = Math.max(picture.ended || 0, ...bars.map((b) => b.end || b.start || 0), 1);
  const lanes = [...new Set(["", ...bars.map((b) => b.lane)])].sort().filter((l) => l !== "client");
  if (bars.some((b) => b.lane === "client")) lanes.push("client");
  node.append(el("p", { class: "description", text: `${bars.length} effects, ${span.toFixed(1)} ms` + (picture.error ? `; failed: ${picture.error}` : "") }));
  for (const lane of lanes) {
    const track = el("div", { class: "track" });
    for (const b of bars.filter((x) => x.lane === lane)) {
      const kind = KINDS.includes(b.kind) ? b.kind : "other";
      const end = b.end === null ? span : b.end;
      const bar = el("span", {
        class: `bar kind-${kind}` + (b.replayed ? " replayed" : "") + (b.error ? " failed" : ""),
        testid: b.lane === "client" ? `wire-${b.kind}` : `bar-${b.kind}`,
        title: `${b.label} (key ${b.key})` + (b.replayed ? " — replayed" : "") + (b.error ? ` — ${b.error}` : ""),
      });
      bar.style.left = `${(100 * b.start) / span}%`;
      bar.style.width = `${Math.max((100 * (end - b.start)) / span, 0.5)}%`;
      track.append(bar);
    }
    const text = lane === "" ? `${picture.title} (server)` : lane === "client" ? "client (wire)" : `branch ${lane}` + (picture.branches[lane.split(".")[0]] ? ` (${picture.branches[lane.split(".")[0]]})` : "");
    node.append(el("div", { class: "row" }, el("span", { class: "lane", text }), track));
  }
  const list = el("ol", { class: "description" });
  for (const b of bars) list.append(el("li", { text: `${b.lane === "client" ? "client: " : ""}${b.kind} ${b.label} [${b.key}]` + (b.replayed ? " (replayed)" : "") + (b.error ? ` — ${b.error}` : "") }));
  node.append(list);
}

function showRun(run) {
  const questions = $("questions");
  clear(questions);
  for (const q of run.questions) questions.append(showQuestion(run, q));
  const logs = $("logs");
  clear(logs);
  if (run.logsLeftOut) logs.append(el("li", { class: "notice", testid: "logs-left-out", text: `… ${run.logsLeftOut.toLocaleString("en-US")} earlier lines not shown` }));
  for (const entry of run.logs) {
    const data = typeof entry.data === "string" ? entry.data : JSON.stringify(entry.data);
    const line = el("li");
    show(line, `${cut(entry.level)}${entry.logger ? " " + cut(entry.logger) : ""}: `, data, "log.txt");
    logs.append(line);
  }
  const p = run.progress;
  $("progress").textContent = p ? `${p.progress}${p.total != null ? " / " + p.total : ""}${p.message ? " " + cut(p.message) : ""}` : "";
  const result = $("result");
  const structured = $("structured");
  if (run.result) {
    show(result, run.result.isError ? "error: " : "", run.result.text, `result-${run.id}.txt`);
    show(structured, "", run.result.structured != null ? JSON.stringify(run.result.structured, null, 2) : "", `structured-${run.id}.json`);
  } else {
    result.textContent = run.status === "running" ? "running…" : "";
    structured.textContent = "";
  }
  showPicture(run.picture);
}

function showHistory() {
  const list = $("history");
  clear(list);
  for (const run of [...state.runs.values()].reverse()) {
    list.append(el("li", { testid: `past-${run.id}` },
      el("button", { text: `#${run.id} ${run.tool} (${run.era}) ${run.status}`, onclick: () => { state.current = run.id; showRun(run); } }),
      el("button", { testid: `again-${run.id}`, text: "run again", onclick: () => startRun(run.tool, run.arguments, run.era) })));
  }
}

function onRun(run) {
  state.runs.set(run.id, run);
  showHistory();
  if (state.current === run.id) showRun(run);
}

// --- the stream --------------------------------------------------------------------

function connect() {
  const events = new EventSource("api/events");
  events.onopen = () => { $("status").textContent = "connected"; };
  events.onerror = () => { $("status").textContent = "disconnected: retrying"; };
  events.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.type === "state") {
      state.models = event.models;
      showListing(event.listing);
      for (const run of event.runs) state.runs.set(run.id, run);
      showHistory();
    } else if (event.type === "listing") showListing(event);
    else if (event.type === "run") onRun(event.run);
  };
}

function legend() {
  const node = $("legend");
  for (const kind of KINDS) node.append(el("span", {}, el("i", { class: `swatch kind-${kind}` }), kind));
  node.append(el("span", {}, el("i", { class: "swatch kind-sample replayed" }), "replayed"));
  node.append(el("span", {}, el("i", { class: "swatch failed" }), "error"));
}

legend();
connect();
