// The inspector page's script. Everything that comes from the service (persona names,
// subjects, addresses, message bodies: mail written by strangers) is inserted with
// textContent, never as markup. The token lives in this tab's sessionStorage and goes
// out only in the Authorization header.
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
    if (pre.persona) selectValue($("persona"), pre.persona);
    fillResponsibilities();
    if (pre.now) $("now").value = pre.now;
    if (pre.responsibility) {
      setTrigger("responsibility");
      selectValue($("responsibility"), pre.responsibility);
    } else if (pre.message) {
      $("message-id").value = pre.message;
    }
    await loadThreads();
    status(personas.length + (personas.length === 1 ? " persona" : " personas") + " loaded.");
    if (pre.persona && (pre.message || pre.responsibility)) await resolve();
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
    start();
  });
})();
