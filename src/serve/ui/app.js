// The inspector page's script. Everything that comes from the service (persona names,
// subjects, addresses, message bodies: mail written by strangers) is inserted with
// textContent, never as markup. The token lives in this tab's sessionStorage and goes
// out only in the Authorization header. A waiting draft's text (written by a model, from
// mail written by strangers) is decoded from its stored bytes and shown as text too; its
// HTML alternative is never shown. An agent job's reason and error (a provider's error
// body, words of a mail) are text too, and so are the tool calls a run waits for (names,
// ids and inputs written by a model from mail written by strangers).
"use strict";

(() => {
  const TOKEN_KEY = "protege-token";
  const $ = (id) => document.getElementById(id);

  /** An element `tag` with `className` and, when given, `text` as its text. */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function status(text, isError) {
    const node = $("status");
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
  }

  function token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (_) {
      return "";
    }
  }

  /** A failed call: its status and the service's message. */
  class ApiError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  /** Calls `path` (relative to the page, so a prefix the router is nested under is kept). */
  async function api(path, body) {
    const headers = { Accept: "application/json" };
    const t = token();
    if (t) headers.Authorization = "Bearer " + t;
    const init = { headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      init.method = "POST";
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    const text = await res.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch (_) {
      data = null;
    }
    if (!res.ok) {
      const message = data && data.error ? data.error.message : text;
      throw new ApiError(res.status, message || res.statusText);
    }
    return data;
  }

  /** The fragment's preselection: `#persona=NAME&message=ID` (or `&responsibility=NAME`,
   * `&now=TIME`). Never a token. */
  function fragment() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    return {
      persona: params.get("persona"),
      message: params.get("message"),
      responsibility: params.get("responsibility"),
      now: params.get("now"),
    };
  }

  let personas = [];

  function showTokenForm(message) {
    $("inspector").hidden = true;
    $("token-panel").hidden = false;
    status(message, true);
    $("token").focus();
  }

  async function start() {
    try {
      const data = await api("v1/personas");
      personas = data.personas || [];
    } catch (e) {
      if (e.code === 401) {
        showTokenForm(token() ? "The token was refused: type it again." : "This service needs its token.");
      } else {
        status("Cannot list the personas: " + e.message, true);
      }
      return;
    }
    $("token-panel").hidden = true;
    $("inspector").hidden = false;
    $("forget-token").hidden = !token();
    fillPersonas();
    const pre = fragment();
    fillForm(pre);
    await Promise.all([loadThreads(), loadDrafts(), loadJobs()]);
    status(personas.length + (personas.length === 1 ? " persona" : " personas") + " loaded.");
    if (pre.persona && (pre.message || pre.responsibility)) await resolve();
  }

  /** Fills the request form with the fragment's preselection `pre`. */
  function fillForm(pre) {
    if (pre.persona) selectValue($("persona"), pre.persona);
    fillResponsibilities();
    if (pre.now) $("now").value = pre.now;
    if (pre.responsibility) {
      setTrigger("responsibility");
      selectValue($("responsibility"), pre.responsibility);
    } else if (pre.message) {
      setTrigger("message");
      $("message-id").value = pre.message;
    }
  }

  /** A preselection given after the page loaded (a link of the page, or a fragment typed
   * into the address bar): the request it names, resolved and shown. */
  async function preselect() {
    if ($("inspector").hidden) return;
    const pre = fragment();
    if (!pre.persona || !(pre.message || pre.responsibility)) return;
    if (!selectValue($("persona"), pre.persona)) return status("No persona " + pre.persona + " is loaded.", true);
    fillForm(pre);
    await resolve();
    if (!$("request-panel").hidden) $("request-panel").scrollIntoView();
  }

  function selectValue(select, value) {
    for (const option of select.options) {
      if (option.value === value) {
        select.value = value;
        return true;
      }
    }
    return false;
  }

  function option(value, label) {
    const node = el("option", null, label);
    node.value = value;
    return node;
  }

  function fillPersonas() {
    const select = $("persona");
    select.replaceChildren(...personas.map((p) => option(p.name, p.name + (p.model ? " (" + (p.model.name || p.model.provider || "") + ")" : ""))));
  }

  function currentPersona() {
    return personas.find((p) => p.name === $("persona").value);
  }

  function fillResponsibilities() {
    const p = currentPersona();
    const names = p ? p.responsibilities || [] : [];
    const select = $("responsibility");
    select.replaceChildren(...names.map((name) => option(name, name)));
  }

  function setTrigger(value) {
    for (const radio of document.querySelectorAll('input[name="trigger"]')) radio.checked = radio.value === value;
    $("message-fields").hidden = value !== "message";
    $("responsibility-fields").hidden = value !== "responsibility";
  }

  function trigger() {
    const checked = document.querySelector('input[name="trigger"]:checked');
    return checked ? checked.value : "message";
  }

  async function loadThreads() {
    let threads = [];
    try {
      threads = await api("v1/threads?limit=200");
    } catch (e) {
      status("Cannot list the threads: " + e.message, true);
      return;
    }
    const select = $("thread");
    select.replaceChildren(
      option("", threads.length ? "— pick a thread —" : "no thread stored"),
      ...threads.map((t) => option(String(t.thread), "#" + t.thread + " " + t.subject + " (" + t.messages + ")")),
    );
    $("message").replaceChildren(option("", "— pick a thread first —"));
  }

  async function loadMessages() {
    const id = $("thread").value;
    const select = $("message");
    if (!id) {
      select.replaceChildren(option("", "— pick a thread first —"));
      return;
    }
    let messages = [];
    try {
      messages = await api("v1/threads/" + encodeURIComponent(id) + "/messages");
    } catch (e) {
      status("Cannot list the messages: " + e.message, true);
      return;
    }
    select.replaceChildren(
      option("", "— pick a message —"),
      ...messages.map((m) => option(m.message_id, m.sent_at.slice(0, 16).replace("T", " ") + " " + m.direction + " " + m.from)),
    );
  }

  async function resolve() {
    const persona = $("persona").value;
    const input = { persona, format: "messages", explain: true };
    if (trigger() === "responsibility") {
      input.responsibility = $("responsibility").value;
      if (!input.responsibility) return status("Pick a responsibility.", true);
    } else {
      input.message_id = $("message-id").value.trim();
      if (!input.message_id) return status("Pick a message or type its Message-ID.", true);
    }
    const now = $("now").value.trim();
    if (now) input.now = now;
    status("Resolving…");
    let answer;
    try {
      answer = await api("v1/resolve", input);
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      status("Cannot resolve: " + e.message, true);
      return;
    }
    render(answer, input);
    status("Resolved.");
  }

  /** The text of a message's content: a string, or its parts. */
  function contentParts(content) {
    if (typeof content === "string") return [{ type: "text", text: content }];
    return Array.isArray(content) ? content : [];
  }

  function describeSource(source) {
    if (!source) return "";
    switch (source.kind) {
      case "message":
        return "message " + source.message_id;
      case "tool_use":
        return "tool round " + source.run_id + " / " + source.tool_call_id;
      case "record":
        return "record " + source.table + " " + JSON.stringify(source.key);
      case "file":
        return "file " + source.path + " (sha256 " + String(source.sha256 || "").slice(0, 12) + "…)";
      case "summary":
        return "summary #" + source.id;
      case "messages":
        return "messages " + (source.message_ids || []).join(", ") + ((source.summary_ids || []).length ? " + summaries " + source.summary_ids.join(", ") : "");
      case "text":
        return "text of " + source.resolver;
      default: {
        const fields = Object.assign({}, source);
        delete fields.kind;
        return source.kind + " " + JSON.stringify(fields);
      }
    }
  }

  const BREAKPOINT = { system: "end of the system prompt (every system message, sent first)", history: "end of the thread history", end: "end of the request" };

  function render(answer, input) {
    const messages = (answer.request && answer.request.messages) || [];
    const tokens = answer.message_tokens || [];
    const sources = answer.sources || [];
    const marks = new Map((answer.cache_breakpoints || []).map((b) => [b.index, b.at]));
    const total = tokens.reduce((a, b) => a + b, 0);
    const max = Math.max(1, ...tokens);
    const trig = input.responsibility ? "responsibility " + input.responsibility : "message " + input.message_id;
    $("request-summary").textContent =
      input.persona + " · " + trig + " · " + messages.length + " messages · " + total + " tokens · sha256 " + String(answer.request_sha256 || "").slice(0, 16) + "…";
    const groups = $("groups");
    groups.replaceChildren();
    let index = 0;
    for (const row of answer.explain || []) {
      const group = el("section", "group");
      group.dataset.resolver = row.resolver;
      const head = el("h3", "group-head");
      head.append(el("span", "resolver", row.resolver), el("span", "group-stats", row.messages + (row.messages === 1 ? " message · " : " messages · ") + row.tokens + " tokens"));
      group.append(head);
      for (let i = 0; i < row.messages && index < messages.length; i++, index++) {
        group.append(block(messages[index], index, tokens[index] || 0, max, sources[index]));
        if (marks.has(index)) {
          group.append(el("div", "breakpoint", "cache breakpoint: " + (BREAKPOINT[marks.get(index)] || marks.get(index))));
        }
      }
      groups.append(group);
    }
    const tools = (answer.request && answer.request.tools) || [];
    const toolsNode = $("tools");
    toolsNode.replaceChildren();
    if (tools.length) {
      toolsNode.append(el("h3", null, "Tools"));
      const list = el("ul", "tool-list");
      for (const t of tools) {
        const item = el("li");
        item.append(el("code", null, t.name), document.createTextNode(" " + (t.description || "")));
        list.append(item);
      }
      toolsNode.append(list);
    }
    $("request-panel").hidden = false;
  }

  function block(message, index, count, max, source) {
    const node = el("article", "block role-" + message.role);
    node.dataset.index = String(index);
    const head = el("div", "block-head");
    head.append(el("span", "role", message.role), el("span", "index", "#" + index), el("span", "tokens", count + " tokens"));
    node.append(head);
    const bar = el("div", "bar");
    const fill = el("span", "fill");
    fill.style.width = Math.max(0.5, (100 * count) / max).toFixed(1) + "%";
    bar.append(fill);
    bar.title = count + " tokens";
    node.append(bar);
    if (message.tool_call_id) node.append(el("p", "meta", "result of " + message.tool_call_id + (message.is_error ? " (error)" : "")));
    for (const part of contentParts(message.content)) {
      if (part.type === "text") {
        if (part.text !== "") node.append(el("pre", "text", part.text));
      } else if (part.type === "image") {
        node.append(el("p", "meta", "image " + part.media_type + ", " + Math.round((part.data || "").length * 0.75) + " bytes"));
      } else if (part.type === "document") {
        node.append(el("p", "meta", "document " + part.filename + " (" + part.media_type + ")"));
      }
    }
    for (const call of message.tool_calls || []) {
      const callNode = el("div", "tool-call");
      callNode.append(el("span", "tool-name", "tool call " + call.name), el("span", "meta", " " + call.id));
      callNode.append(el("pre", "text", JSON.stringify(call.input, null, 2)));
      node.append(callNode);
    }
    if (source) node.append(el("p", "source", "source: " + describeSource(source)));
    return node;
  }

  /** The persona name a pasted file declares (`name = "..."` before any table), else the
   * file's stem. */
  function declaredName(text, file) {
    for (const line of text.split("\n")) {
      if (/^\s*\[/.test(line)) break;
      const m = /^\s*name\s*=\s*"([^"\\]*)"/.exec(line);
      if (m) return m[1];
    }
    return file.replace(/\.toml$/, "");
  }

  async function diff() {
    const file = $("diff-file").value.trim();
    const text = $("diff-text").value;
    if (!file || !text) return status("Give the file name and the persona's TOML.", true);
    const body = { personas: { [file]: text }, persona: declaredName(text, file) };
    const now = $("now").value.trim();
    if (now) body.now = now;
    status("Comparing…");
    let answer;
    try {
      answer = await api("v1/diff", body);
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      status("Cannot diff: " + e.message, true);
      return;
    }
    const out = $("diff-result");
    out.replaceChildren();
    for (const d of answer.personas || []) {
      const card = el("article", "diff status-" + d.status);
      const head = el("div", "block-head");
      const delta = d.tokens_after - d.tokens_before;
      head.append(
        el("span", "role", d.persona),
        el("span", "diff-status", d.status),
        el("span", "tokens", d.tokens_before + " → " + d.tokens_after + " tokens (" + (delta > 0 ? "+" : "") + delta + ")"),
      );
      card.append(head, el("p", "meta", d.changed + " of " + d.requests + " requests change"));
      for (const line of d.diagnostics || []) card.append(el("p", "diagnostic", line));
      if (d.first_change) {
        card.append(el("p", "meta", "first change: " + d.first_change.message_id));
        const pre = el("pre", "unified");
        for (const line of d.first_change.diff.split("\n")) {
          const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
          pre.append(el("span", cls, line + "\n"));
        }
        card.append(pre);
      }
      out.append(card);
    }
    status(answer.changed ? "The pasted persona changes requests." : "No request changes.");
  }

  // ---- Waiting drafts --------------------------------------------------------------

  /** The header and body of a MIME entity, split at its first empty line. */
  function entity(text) {
    const m = /\r?\n\r?\n/.exec(text);
    if (!m) return { head: text, body: "" };
    return { head: text.slice(0, m.index), body: text.slice(m.index + m[0].length) };
  }

  /** The header fields of `head` by lowercase name (the first of each), unfolded. */
  function headerFields(head) {
    const out = new Map();
    for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
      const at = line.indexOf(":");
      if (at <= 0) continue;
      const name = line.slice(0, at).trim().toLowerCase();
      if (!out.has(name)) out.set(name, line.slice(at + 1).trim());
    }
    return out;
  }

  /** The parameter `name` of a header value (`type/sub; name=value` or `name="value"`). */
  function headerParam(value, name) {
    for (const piece of (value || "").split(";").slice(1)) {
      const at = piece.indexOf("=");
      if (at < 0 || piece.slice(0, at).trim().toLowerCase() !== name) continue;
      const raw = piece.slice(at + 1).trim();
      return /^".*"$/.test(raw) ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw;
    }
    return null;
  }

  /** The bodies of the parts of a multipart body with `boundary`. */
  function multipartParts(body, boundary) {
    const parts = [];
    let current = null;
    for (const line of body.split(/\r?\n/)) {
      const bare = line.replace(/[ \t]+$/, "");
      if (bare === "--" + boundary + "--") break;
      if (bare === "--" + boundary) {
        if (current) parts.push(current.join("\r\n"));
        current = [];
      } else if (current) {
        current.push(line);
      }
    }
    if (current) parts.push(current.join("\r\n"));
    return parts;
  }

  /** The bytes of a quoted-printable body: soft line breaks (`=` at a line's end) removed,
   * `=XX` as the byte XX, white space at a line's end dropped (RFC 2045 §6.7). */
  function quotedPrintableBytes(text) {
    const s = text.replace(/[ \t]+(?=\r?\n|$)/g, "");
    const out = [];
    const encoder = new TextEncoder();
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0x3d) {
        if (s[i + 1] === "\r" && s[i + 2] === "\n") {
          i += 2;
          continue;
        }
        if (s[i + 1] === "\n" || i + 1 === s.length) {
          i += 1;
          continue;
        }
        const hex = s.slice(i + 1, i + 3);
        if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
          out.push(parseInt(hex, 16));
          i += 2;
          continue;
        }
        out.push(c);
      } else if (c < 0x80) {
        out.push(c);
      } else {
        out.push(...encoder.encode(s[i]));
      }
    }
    return new Uint8Array(out);
  }

  function base64Bytes(text) {
    const binary = atob(text.replace(/[^A-Za-z0-9+/=]/g, ""));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  }

  /** `bytes` as text in `charset` (UTF-8 when the label is unknown). */
  function decodeBytes(bytes, charset) {
    let decoder;
    try {
      decoder = new TextDecoder(charset || "utf-8");
    } catch (_) {
      decoder = new TextDecoder("utf-8");
    }
    return decoder.decode(bytes);
  }

  /** The first text/plain part of the entity `text`, decoded, and whether an HTML part was
   * seen on the way: `{ text, html }` (`text` null when there is none). */
  function plainText(text, depth) {
    const { head, body } = entity(text);
    const fields = headerFields(head);
    const contentType = fields.get("content-type") || "text/plain; charset=us-ascii";
    const type = contentType.split(";")[0].trim().toLowerCase();
    if (type.startsWith("multipart/")) {
      const boundary = headerParam(contentType, "boundary");
      const out = { text: null, html: false };
      if (!boundary || depth > 4) return out;
      for (const part of multipartParts(body, boundary)) {
        const found = plainText(part, depth + 1);
        out.html = out.html || found.html;
        if (out.text === null) out.text = found.text;
      }
      return out;
    }
    if (type === "text/html") return { text: null, html: true };
    if (type !== "text/plain" || /^\s*attachment/i.test(fields.get("content-disposition") || "")) {
      return { text: null, html: false };
    }
    const encoding = (fields.get("content-transfer-encoding") || "7bit").trim().toLowerCase();
    const charset = headerParam(contentType, "charset");
    let decoded;
    try {
      if (encoding === "quoted-printable") decoded = decodeBytes(quotedPrintableBytes(body), charset);
      else if (encoding === "base64") decoded = decodeBytes(base64Bytes(body), charset);
      else decoded = body;
    } catch (_) {
      decoded = body;
    }
    // Line ends as a textarea has them; the line ends that close the body are not text.
    return { text: decoded.replace(/\r\n?/g, "\n").replace(/\n+$/, ""), html: false };
  }

  /** A stored reply: its text/plain body (null when none), whether it has an HTML part,
   * and its Date header. */
  function readReply(raw) {
    const found = plainText(raw || "", 0);
    const date = headerFields(entity(raw || "").head).get("date") || null;
    return { text: found.text, html: found.html, date };
  }

  /** A Date header as `YYYY-MM-DD HH:MM UTC`, or as written when it does not parse. */
  function when(date) {
    if (!date) return "";
    const parsed = new Date(date);
    if (Number.isNaN(parsed.getTime())) return date;
    return parsed.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  /** A stored time (RFC 3339) as `YYYY-MM-DD HH:MM UTC`. */
  function stamp(time) {
    return String(time || "").slice(0, 16).replace("T", " ") + " UTC";
  }

  const DRAFT_LIMIT = 100;
  /** The draft shown: its row, its text as stored; `seq` drops answers of an earlier pick. */
  const draft = { row: null, text: "", seq: 0 };

  async function loadDrafts() {
    let rows;
    try {
      rows = (await api("v1/outbox?state=waiting&limit=" + DRAFT_LIMIT)).outbox || [];
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      $("drafts-summary").textContent = "Cannot list the drafts: " + e.message;
      return;
    }
    $("drafts-summary").textContent =
      rows.length === 0
        ? "No draft waits."
        : rows.length === 1
          ? "1 draft waits."
          : rows.length + " drafts wait" + (rows.length === DRAFT_LIMIT ? " (the newest " + DRAFT_LIMIT + " listed)." : ".");
    const list = $("drafts");
    list.replaceChildren(...rows.map(draftRow));
    list.hidden = rows.length === 0;
    markSelected();
    // The row carries no time of its own: the reply's Date header tells when it was written.
    await Promise.all(
      rows.map(async (row) => {
        try {
          const full = await api("v1/outbox/" + encodeURIComponent(row.id));
          const cell = list.querySelector('.draft-pick[data-id="' + row.id + '"] .draft-when');
          if (cell) cell.textContent = when(readReply(full.raw).date);
        } catch (_) {
          // The time stays empty; the row may have been decided meanwhile.
        }
      }),
    );
  }

  function draftRow(row) {
    const item = el("li", "draft-row");
    const pick = el("button", "draft-pick");
    pick.type = "button";
    pick.dataset.id = String(row.id);
    pick.append(
      el("span", "draft-persona", row.persona),
      el("span", "draft-reason", row.reason || ""),
      el("span", "draft-message-id", row.message_id),
      el("span", "draft-when", ""),
    );
    pick.addEventListener("click", () => selectDraft(row.id));
    item.append(pick);
    return item;
  }

  function markSelected() {
    for (const pick of document.querySelectorAll(".draft-pick")) {
      const selected = draft.row !== null && pick.dataset.id === String(draft.row.id);
      pick.classList.toggle("selected", selected);
      pick.setAttribute("aria-pressed", selected ? "true" : "false");
    }
  }

  function describeRow(row) {
    let text = "#" + row.id + " · " + row.persona + " · " + row.state;
    if (row.reason) text += " (" + row.reason + ")";
    if (row.approved_by) text += " · decided by " + row.approved_by;
    return text;
  }

  function setDecisionButtons(enabled) {
    for (const button of document.querySelectorAll("#draft-form .decide")) button.disabled = !enabled;
  }

  function answer(text, isError, body) {
    const node = $("draft-answer");
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
    const pre = $("draft-answer-body");
    pre.textContent = body === undefined ? "" : JSON.stringify(body, null, 2);
    pre.hidden = body === undefined;
  }

  async function selectDraft(id) {
    const seq = ++draft.seq;
    draft.row = { id };
    draft.text = "";
    markSelected();
    $("draft").hidden = false;
    $("draft-head").textContent = "#" + id;
    $("draft-meta").textContent = "";
    $("draft-text").textContent = "Loading…";
    $("draft-note").hidden = true;
    $("draft-edit").value = "";
    $("draft-reason").value = "";
    $("draft-thread").replaceChildren();
    $("draft-thread-summary").textContent = "";
    answer("");
    setDecisionButtons(false);
    let row;
    try {
      row = await api("v1/outbox/" + encodeURIComponent(id));
    } catch (e) {
      if (seq !== draft.seq) return;
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      $("draft-text").textContent = "";
      answer("Cannot load draft #" + id + ": " + e.message, true);
      return;
    }
    if (seq !== draft.seq) return;
    const reply = readReply(row.raw);
    draft.row = row;
    draft.text = reply.text === null ? "" : reply.text;
    $("draft-head").textContent = describeRow(row);
    $("draft-meta").textContent = "Message-ID " + row.message_id + (reply.date ? " · written " + when(reply.date) : "");
    $("draft-text").textContent = reply.text === null ? "" : reply.text;
    $("draft-edit").value = draft.text;
    const notes = [];
    if (reply.text === null) notes.push("This reply has no text/plain part.");
    if (reply.html) notes.push("It also carries an HTML part made from this text; the HTML is not shown.");
    $("draft-note").textContent = notes.join(" ");
    $("draft-note").hidden = notes.length === 0;
    setDecisionButtons(row.state === "waiting");
    markSelected();
    await showThread(row, seq);
  }

  /** The thread of the draft `row` (its `thread_id`) and its messages, oldest first;
   * `null` when the thread no longer holds the draft. */
  async function threadOf(row) {
    const messages = await api("v1/threads/" + encodeURIComponent(row.thread_id) + "/messages");
    if (!messages.some((m) => m.message_id === row.message_id)) return null;
    return { thread: { thread: row.thread_id, subject: messages.length ? messages[0].subject : "" }, messages };
  }

  async function showThread(row, seq) {
    $("draft-thread-summary").textContent = "Looking for the thread…";
    let found;
    try {
      found = await threadOf(row);
    } catch (e) {
      if (seq !== draft.seq) return;
      $("draft-thread-summary").textContent = "Cannot list the thread: " + e.message;
      return;
    }
    if (seq !== draft.seq) return;
    if (!found) {
      $("draft-thread-summary").textContent = "The thread of this draft no longer holds it.";
      return;
    }
    const { thread, messages } = found;
    $("draft-thread-summary").textContent =
      "#" + thread.thread + " " + thread.subject + " · " + messages.length + (messages.length === 1 ? " message" : " messages");
    const own = messages.find((m) => m.message_id === row.message_id);
    if (own) {
      $("draft-meta").textContent =
        "To " + own.to.concat(own.cc).join(", ") + " · " + own.subject + " · Message-ID " + row.message_id + " · written " + stamp(own.sent_at);
    }
    $("draft-thread").replaceChildren(
      ...messages.map((m) => {
        const item = el("li", "thread-message direction-" + m.direction + (m.message_id === row.message_id ? " this-draft" : ""));
        const head = el("div", "thread-message-head");
        head.append(
          el("span", "thread-direction", m.message_id === row.message_id ? "this draft" : m.direction),
          el("span", "thread-from", m.from),
          el("span", "thread-sent", stamp(m.sent_at)),
        );
        const attachments = (m.attachments || []).length;
        item.append(
          head,
          el("p", "thread-subject", m.subject),
          el(
            "p",
            "thread-detail",
            m.message_id + " · " + m.body_chars + " characters" + (attachments ? " · " + attachments + (attachments === 1 ? " attachment" : " attachments") : ""),
          ),
        );
        return item;
      }),
    );
  }

  /** Approves (`approve`) or rejects the draft shown, and shows the route's answer. */
  async function decide(approve) {
    const row = draft.row;
    if (!row || !row.message_id) return;
    const by = $("draft-by").value.trim();
    if (!by) {
      answer("Type who decides in “Decided by”.", true);
      $("draft-by").focus();
      return;
    }
    const body = { by };
    if (approve) {
      const text = $("draft-edit").value;
      if (text !== draft.text) body.text = text;
    } else {
      body.reason = $("draft-reason").value.trim();
    }
    const verb = approve ? "approve" : "reject";
    setDecisionButtons(false);
    answer(approve ? "Approving…" : "Rejecting…");
    let done;
    try {
      done = await api("v1/outbox/" + encodeURIComponent(row.id) + "/" + verb, body);
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      if (draft.row !== row) return loadDrafts(); // another draft was picked meanwhile
      answer("Refused (" + e.code + "): " + e.message, true);
      if (e.code === 409) {
        // Decided elsewhere: show the row as it is now.
        try {
          const now = await api("v1/outbox/" + encodeURIComponent(row.id));
          if (draft.row === row) {
            draft.row = now;
            $("draft-head").textContent = describeRow(now);
          }
        } catch (_) {
          // The answer above says enough.
        }
      } else {
        setDecisionButtons(true);
      }
      await loadDrafts();
      return;
    }
    if (draft.row !== row) return loadDrafts();
    draft.row = done;
    $("draft-head").textContent = describeRow(done);
    answer(
      (approve ? "Approved" : "Rejected") + (body.text !== undefined ? " with the edited text" : "") + ": #" + done.id + " is " + done.state + ".",
      false,
      done,
    );
    await loadDrafts();
  }

  // ---- Agent jobs ------------------------------------------------------------------

  const JOB_LIMIT = 100;
  /** The most characters of a job's error shown in its row; the whole text is its title. */
  const ERROR_CHARS = 80;
  /** `seq` drops the answers of an earlier listing (another state picked meanwhile). */
  const jobs = { seq: 0 };

  function jobsAnswer(text, isError) {
    const node = $("jobs-answer");
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
  }

  /** `text` cut to `limit` characters (code points), `…` closing a cut text. */
  function truncate(text, limit) {
    const chars = Array.from(text);
    return chars.length <= limit ? text : chars.slice(0, limit).join("") + "…";
  }

  async function loadJobs() {
    const seq = ++jobs.seq;
    const state = $("jobs-state").value;
    let rows;
    try {
      const query = "limit=" + JOB_LIMIT + (state ? "&state=" + encodeURIComponent(state) : "");
      rows = (await api("v1/agent/jobs?" + query)).jobs || [];
    } catch (e) {
      if (seq !== jobs.seq) return;
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      $("jobs-summary").textContent = "Cannot list the jobs: " + e.message;
      $("jobs-rows").replaceChildren();
      $("jobs").hidden = true;
      return;
    }
    if (seq !== jobs.seq) return;
    const what = (state ? state + " " : "") + (rows.length === 1 ? "job" : "jobs");
    $("jobs-summary").textContent =
      rows.length === 0
        ? "No " + (state ? state + " " : "") + "job."
        : rows.length + " " + what + (rows.length === JOB_LIMIT ? " (the newest " + JOB_LIMIT + " listed)." : ".");
    $("jobs-rows").replaceChildren(...rows.map(jobRow));
    $("jobs").hidden = rows.length === 0;
  }

  function jobRow(row) {
    const tr = el("tr", "job-row state-" + row.state);
    tr.dataset.id = String(row.id);
    const message = el("td", "job-message");
    if (row.message_id) {
      // The request the job's persona would send for its message, in the panel above.
      const link = el("a", null, row.message_id);
      const params = new URLSearchParams({ persona: row.persona, message: row.message_id });
      link.href = "#" + params.toString();
      link.title = "The request of " + row.persona + " for this message";
      link.addEventListener("click", (event) => {
        if (link.hash !== location.hash) return; // hashchange resolves it
        event.preventDefault();
        preselect();
      });
      message.append(link);
    } else if (row.slot_id !== null && row.slot_id !== undefined) {
      message.textContent = "responsibility slot " + row.slot_id;
    }
    const updated = el("td", "job-updated", stamp(row.updated_at));
    updated.title = "created " + row.created_at + " · updated " + row.updated_at + (row.next_attempt_at ? " · next attempt " + row.next_attempt_at : "");
    const error = el("td", "job-error");
    if (row.error) {
      error.textContent = truncate(row.error, ERROR_CHARS);
      error.title = row.error;
    }
    const action = el("td", "job-action");
    if (row.state === "failed") {
      const button = el("button", "job-retry", "Retry");
      button.type = "button";
      button.dataset.id = String(row.id);
      button.setAttribute("aria-label", "Retry job #" + row.id);
      button.addEventListener("click", () => retryJob(row.id, button));
      action.append(button);
    } else if (row.state === "waiting" && row.run_id) {
      const button = el("button", "job-review", "Review calls");
      button.type = "button";
      button.dataset.id = String(row.id);
      button.setAttribute("aria-label", "Review the calls job #" + row.id + " waits for");
      button.setAttribute("aria-controls", "calls");
      button.setAttribute("aria-expanded", calls.job !== null && calls.job.id === row.id ? "true" : "false");
      button.addEventListener("click", () => reviewCalls(row));
      action.append(button);
    }
    tr.append(
      el("td", "job-id", "#" + row.id),
      el("td", "job-persona", row.persona),
      el("td", "job-state", row.state),
      el("td", "job-reason", row.reason || ""),
      el("td", "job-attempts", row.attempts),
      message,
      el("td", "job-run", row.run_id || ""),
      updated,
      error,
      action,
    );
    return tr;
  }

  /** Queues failed job `id` again, shows the route's answer, and lists the jobs anew. */
  async function retryJob(id, button) {
    const focused = document.activeElement === button;
    button.disabled = true;
    jobsAnswer("Retrying #" + id + "…");
    let job = null;
    try {
      job = await api("v1/agent/jobs/" + encodeURIComponent(id) + "/retry", {});
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      jobsAnswer("Refused (" + e.code + "): " + e.message, true);
    }
    if (job) jobsAnswer("Retried: #" + job.id + " is " + job.state + ".");
    await loadJobs();
    // The button is gone with its row: the focus stays in the panel.
    if (focused && !button.isConnected) $("jobs-refresh").focus();
  }

  // ---- Tool calls a run waits for ---------------------------------------------------

  const BY_KEY = "protege-decided-by";
  /** The job reviewed and its run's waiting calls, each with its input's text as shown;
   * `seq` drops the answers of an earlier review. */
  const calls = { job: null, run: null, shown: [], base: "", seq: 0 };

  function callsAnswer(text, isError) {
    const node = $("calls-answer");
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
  }

  function setCallButtons(enabled) {
    for (const button of document.querySelectorAll("#calls-form .decide")) button.disabled = !enabled;
  }

  /** Marks the Review button of the job reviewed as the one whose calls are open. */
  function markReviewed() {
    for (const button of document.querySelectorAll(".job-review")) {
      const open = calls.job !== null && button.dataset.id === String(calls.job.id);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    }
  }

  /** Opens the calls the run of waiting job `row` waits for, below the table. */
  async function reviewCalls(row) {
    const seq = ++calls.seq;
    calls.job = row;
    calls.run = null;
    calls.shown = [];
    markReviewed();
    $("calls").hidden = false;
    $("calls-head").textContent = "Calls job #" + row.id + " waits for";
    $("calls-summary").textContent = "Loading…";
    $("calls-list").replaceChildren();
    $("calls-form").hidden = true;
    $("calls-reason").value = "";
    callsAnswer("");
    $("calls-head").focus();
    let waiting;
    try {
      waiting = await api("v1/runs/" + encodeURIComponent(row.run_id) + "/waiting");
    } catch (e) {
      if (seq !== calls.seq) return;
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      $("calls-summary").textContent = "";
      callsAnswer("Cannot list the calls (" + e.code + "): " + e.message, true);
      await loadJobs();
      return;
    }
    if (seq !== calls.seq) return;
    calls.run = waiting.run_id;
    const list = waiting.calls || [];
    calls.base = row.persona + " · run " + waiting.run_id + " · round " + waiting.round;
    $("calls-summary").textContent = calls.base + " · " + list.length + (list.length === 1 ? " call waits." : " calls wait.");
    calls.shown = list.map((call) => ({ call, text: JSON.stringify(call.input, null, 2) }));
    $("calls-list").replaceChildren(...calls.shown.map(callItem));
    $("calls-form").hidden = false;
    setCallButtons(true);
  }

  /** The item of waiting call `shown.call`: its tool, its id, its input editable. */
  function callItem(shown, i) {
    const { call, text } = shown;
    const item = el("li", "waiting-call");
    item.dataset.id = call.tool_call_id;
    const head = el("div", "call-head");
    head.append(el("span", "call-name", call.name), el("span", "call-id", call.tool_call_id));
    const field = el("div", "field");
    const label = el("label", null, "Input of " + call.name + " (" + call.tool_call_id + "), as JSON");
    const input = el("textarea", "call-input");
    input.id = "call-input-" + i;
    label.htmlFor = input.id;
    input.spellcheck = false;
    input.rows = Math.min(16, Math.max(3, text.split("\n").length + 1));
    input.value = text;
    const error = el("p", "call-error");
    error.id = "call-error-" + i;
    error.hidden = true;
    input.setAttribute("aria-describedby", error.id);
    input.addEventListener("input", () => markInput(input, error, null));
    field.append(label, input);
    item.append(head, field, error);
    return item;
  }

  /** Shows `message` as the error of a call's input, or clears it when `null`. */
  function markInput(input, error, message) {
    error.textContent = message || "";
    error.hidden = !message;
    if (message) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }

  /** Who decides, as typed (and kept for this tab), or `null` after saying it is missing. */
  function decider() {
    const by = $("calls-by").value.trim();
    if (!by) {
      callsAnswer("Type who decides in “Decided by”.", true);
      $("calls-by").focus();
      return null;
    }
    try {
      sessionStorage.setItem(BY_KEY, by);
    } catch (_) {
      // Not kept: typed again next time.
    }
    return by;
  }

  /** The approval's calls, each with its input when its text was edited; `null` (nothing
   * sent) when a text is no JSON, its error shown and the focus on it. */
  function approvedCalls() {
    const out = [];
    let first = null;
    calls.shown.forEach((shown, i) => {
      const input = $("call-input-" + i);
      const error = $("call-error-" + i);
      const entry = { tool_call_id: shown.call.tool_call_id };
      if (input.value !== shown.text) {
        try {
          entry.input = JSON.parse(input.value);
          markInput(input, error, null);
        } catch (e) {
          markInput(input, error, "This input is no valid JSON: " + e.message);
          if (first === null) first = { input, call: shown.call };
        }
      }
      out.push(entry);
    });
    if (first === null) return out;
    callsAnswer("Nothing was sent: the input of " + first.call.name + " (" + first.call.tool_call_id + ") is no valid JSON.", true);
    first.input.focus();
    return null;
  }

  /** Approves (`approve`) or rejects the calls shown, shows the route's answer, and lists
   * the jobs anew. */
  async function decideCalls(approve) {
    const job = calls.job;
    const run = calls.run;
    if (!job || !run) return;
    const by = decider();
    if (by === null) return;
    const body = { by };
    if (approve) {
      const list = approvedCalls();
      if (list === null) return;
      body.calls = list;
    } else {
      body.reason = $("calls-reason").value.trim();
      if (!body.reason) {
        callsAnswer("Type the reason of the rejection: the model is told it.", true);
        $("calls-reason").focus();
        return;
      }
    }
    const focused = document.activeElement;
    setCallButtons(false);
    callsAnswer(approve ? "Approving…" : "Rejecting…");
    let done;
    try {
      done = await api("v1/runs/" + encodeURIComponent(run) + "/" + (approve ? "approve" : "reject"), body);
    } catch (e) {
      if (e.code === 401) return showTokenForm("The token was refused: type it again.");
      if (calls.job !== job) return loadJobs(); // another job was reviewed meanwhile
      callsAnswer("Refused (" + e.code + "): " + e.message, true);
      if (e.code === 409) {
        // Decided elsewhere: nothing is left to decide here.
        calls.run = null;
        $("calls-summary").textContent = calls.base + " · no longer waiting.";
      } else {
        setCallButtons(true);
      }
      if (focused && focused.disabled) $("calls-head").focus();
      else if (focused) focused.focus();
      await loadJobs();
      return;
    }
    if (calls.job !== job) return loadJobs();
    const edited = approve ? body.calls.filter((c) => c.input !== undefined).length : 0;
    const jobId = approve && done.job !== undefined ? done.job : job.id;
    callsAnswer(
      (approve ? "Approved" : "Rejected") +
        (edited ? " with " + edited + (edited === 1 ? " edited input" : " edited inputs") : "") +
        ": run " + done.run_id + " goes on, job #" + jobId + " is queued.",
    );
    // Decided: the calls are no longer waiting, the answer stays in view.
    calls.run = null;
    $("calls-summary").textContent = calls.base + " · " + (approve ? "approved" : "rejected") + " by " + by + ".";
    $("calls-form").hidden = true;
    $("calls-head").focus();
    await loadJobs();
  }

  /** Closes the calls section; the focus goes back to the job's Review button, or to the
   * panel's Refresh button when the job no longer waits. */
  function closeCalls() {
    const job = calls.job;
    calls.seq++;
    calls.job = null;
    calls.run = null;
    calls.shown = [];
    $("calls").hidden = true;
    $("calls-list").replaceChildren();
    markReviewed();
    const button = job && document.querySelector('.job-review[data-id="' + job.id + '"]');
    (button || $("jobs-refresh")).focus();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = $("token").value;
      $("token").value = "";
      try {
        sessionStorage.setItem(TOKEN_KEY, value);
      } catch (_) {
        status("This browser keeps no session storage: the token cannot be kept.", true);
        return;
      }
      start();
    });
    $("forget-token").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      location.reload();
    });
    $("pick-form").addEventListener("submit", (event) => {
      event.preventDefault();
      resolve();
    });
    $("diff-form").addEventListener("submit", (event) => {
      event.preventDefault();
      diff();
    });
    $("persona").addEventListener("change", fillResponsibilities);
    $("thread").addEventListener("change", loadMessages);
    $("message").addEventListener("change", () => {
      if ($("message").value) $("message-id").value = $("message").value;
    });
    for (const radio of document.querySelectorAll('input[name="trigger"]')) {
      radio.addEventListener("change", () => setTrigger(trigger()));
    }
    $("drafts-refresh").addEventListener("click", loadDrafts);
    $("jobs-refresh").addEventListener("click", loadJobs);
    $("jobs-state").addEventListener("change", loadJobs);
    window.addEventListener("hashchange", preselect);
    $("draft-form").addEventListener("submit", (event) => event.preventDefault());
    $("draft-approve").addEventListener("click", () => decide(true));
    $("draft-reject").addEventListener("click", () => decide(false));
    $("calls-form").addEventListener("submit", (event) => event.preventDefault());
    $("calls-approve").addEventListener("click", () => decideCalls(true));
    $("calls-reject").addEventListener("click", () => decideCalls(false));
    $("calls-close").addEventListener("click", closeCalls);
    // Escape closes the calls, unless it is pressed in an input being edited.
    $("calls").addEventListener("keydown", (event) => {
      if (event.key === "Escape" && event.target.tagName !== "TEXTAREA") closeCalls();
    });
    try {
      $("calls-by").value = sessionStorage.getItem(BY_KEY) || "";
    } catch (_) {
      // No session storage: typed each time.
    }
    $("draft-restore").addEventListener("click", () => {
      $("draft-edit").value = draft.text;
    });
    start();
  });
})();
