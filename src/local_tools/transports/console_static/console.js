// The local-tools web console: what waits for the person on top, then the plan (the
// todo lists the tools keep), the changes the calls made (with undo), the call log below.
//
// Arguments, subjects, questions and options come from a model: every such text is
// inserted as a text node (textContent / append(string)), never parsed as HTML, and
// control or direction-override characters are shown escaped so that a subject
// cannot disguise itself.
"use strict";

(() => {
  const API = "/console/api/";
  const MAX_CALLS = 200; // top-level rows kept, each with the calls it made
  const MAX_ROWS = 2000; // rows at every depth: a task's hundreds of calls stay bounded
  const WAIT_MS = 3000; // how long a call waits hidden for the call that made it
  const RECONNECT_MS = 3000;

  const $ = (id) => document.getElementById(id);
  const cards = new Map(); // pending request id -> its card element
  const callIds = new Set(); // audit row ids shown, at every depth
  const byCallId = new Map(); // call_id -> its row (never an answer's): where its calls go
  const awaiting = new Map(); // parent call_id -> rows that came before it
  const parts = new WeakMap(); // row -> { kids: its nested list, count: its "N calls" }
  let filterWords = [];
  let source = null;
  let retryTimer = null;

  // ------------------------------------------------------------------ helpers

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    return fill(node, ...children);
  }

  function fill(node, ...children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child); // a string becomes a text node
    }
    return node;
  }

  // Control, zero-width and bidi characters, shown as \uXXXX (newlines and tabs kept).
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
  function visible(text) {
    return String(text).replace(HIDDEN, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }

  function ago(ts) {
    const s = Math.max(0, Date.now() / 1000 - ts);
    if (s < 5) return "just now";
    if (s < 60) return `${Math.floor(s)} s ago`;
    if (s < 3600) return `${Math.floor(s / 60)} min ago`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
    return new Date(ts * 1000).toLocaleDateString();
  }

  function timeEl(ts) {
    const when = new Date(ts * 1000);
    return el("time", { class: "ago", datetime: when.toISOString(), title: when.toLocaleString(), "data-ts": ts }, ago(ts));
  }

  function duration(ms) {
    if (ms < 1) return "<1 ms";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  }

  function oneLine(value) {
    const text = typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value);
    return text === undefined ? String(value) : text;
  }

  function argsSummary(args) {
    if (args === null || typeof args !== "object" || Array.isArray(args)) return visible(oneLine(args));
    const parts = Object.entries(args).map(([k, v]) => `${k}=${oneLine(v)}`);
    const text = parts.join(" ");
    return visible(text.length > 240 ? text.slice(0, 240) + "…" : text);
  }

  // The Changes panel lives in console_changes.js (loaded after this file, before the
  // page is ready): it gets these helpers and hands back its hooks.
  const shared = (window.localToolsConsole = { API, $, el, fill, visible, timeEl, statusLine });
  const changes = () => shared.changes;

  // ------------------------------------------------------------------ connection

  function setConn(state, text) {
    $("conn").dataset.state = state;
    $("conn-text").textContent = text;
  }

  function connect() {
    clearTimeout(retryTimer);
    if (source) source.close();
    setConn("connecting", "connecting…");
    source = new EventSource(API + "events");
    source.addEventListener("open", () => {
      setConn("live", "live");
      $("signin").hidden = true;
    });
    source.addEventListener("state", (e) => applyState(JSON.parse(e.data)));
    source.addEventListener("pending", (e) => applyPending(JSON.parse(e.data)));
    source.addEventListener("calls", (e) => {
      const calls = JSON.parse(e.data).calls;
      addCalls(calls);
      if (changes().filesChanged(calls)) changes().schedule();
    });
    source.addEventListener("todos", (e) => renderTodos(JSON.parse(e.data).todos));
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused (not signed in) or gone: find out which, then try again later.
        setConn("offline", "offline");
        checkSignedIn();
        retryTimer = setTimeout(connect, RECONNECT_MS);
      } else {
        setConn("reconnecting", "reconnecting…");
      }
    });
  }

  async function checkSignedIn() {
    try {
      const r = await fetch(API + "state", { credentials: "same-origin" });
      if (r.status === 401 || r.status === 403) {
        $("signin").hidden = false;
        setConn("offline", "not signed in");
      }
    } catch (_) {
      /* the server is down: the indicator already says offline */
    }
  }

  // ------------------------------------------------------------------ state

  function applyState(state) {
    const ws = $("workspace");
    // Isolated left-to-right inside the right-to-left box: long paths lose their start.
    ws.replaceChildren(el("bdi", { dir: "ltr" }, visible(state.workspace || "")));
    ws.title = `workspace: ${visible(state.workspace || "")}`;
    $("calls").replaceChildren();
    callIds.clear();
    byCallId.clear();
    awaiting.clear();
    // The whole recent log at once: a call whose maker is not in it shows at once.
    addCalls(state.calls || [], 0);
    applyPending(state);
    renderTodos(state.todos || []);
    changes().schedule(0); // (re)connected: calls may have changed files meanwhile
  }

  function applyPending(state) {
    const pending = state.pending || [];
    const ids = new Set(pending.map((p) => p.id));
    for (const [id, card] of cards) {
      if (!ids.has(id)) removeCard(id, card);
    }
    for (const item of pending) {
      if (cards.has(item.id)) continue; // keep what the person has typed or chosen
      const card = { question: questionCard, review: reviewCard }[item.kind]?.(item) || permissionCard(item);
      cards.set(item.id, card);
      $("pending-list").append(card);
    }
    const n = pending.length;
    $("pending-empty").hidden = n > 0;
    $("pending-count").textContent = n ? String(n) : "";
    $("pending-panel").classList.toggle("has-pending", n > 0);
    document.title = n ? `(${n}) waiting · local-tools` : "local-tools console";
    renderHistory(state.history || []);
  }

  function removeCard(id, card) {
    const hadFocus = card.contains(document.activeElement);
    card.remove();
    cards.delete(id);
    if (hadFocus) {
      // Keyboard users land on the next request, or on the section's heading.
      const next = $("pending-list").querySelector("button:not([disabled])");
      (next || $("pending-title")).focus();
    }
  }

  // ------------------------------------------------------------------ requests

  function cardHead(item, badge, badgeClass, title) {
    const p = item.payload || {};
    return el(
      "header",
      { class: "card-head" },
      el("span", { class: `badge ${badgeClass}` }, badge),
      el("h3", { id: `title-${item.id}` }, title),
      el("span", { class: "meta" }, p.user_id ? `${visible(p.user_id)} · ` : "", timeEl(item.created)),
    );
  }

  function statusLine() {
    return el("p", { class: "card-status", role: "status", "aria-live": "polite" });
  }

  function ruleEl(permission, subject) {
    return el(
      "span",
      { class: "rule" },
      el("code", { class: "rule-perm" }, visible(permission)),
      el("span", { class: "rule-arrow", "aria-hidden": "true" }, "→"),
      subject === null || subject === undefined
        ? el("em", { class: "rule-all" }, "every subject")
        : el("code", { class: "rule-subject" }, visible(subject)),
    );
  }

  function permissionCard(item) {
    const p = item.payload || {};
    const hasPattern = p.suggestion !== null && p.suggestion !== undefined;
    const status = statusLine();
    const card = el("article", { class: "card permission", "aria-labelledby": `title-${item.id}`, "data-id": item.id });

    const choose = el("div", { class: "actions" });
    const remember = el("fieldset", { class: "remember", hidden: true });
    const rules = el("div", { class: "choices" });
    const name = `rule-${item.id}`;
    const exact = el("input", { type: "radio", name, value: "always", checked: true });
    rules.append(
      el(
        "label",
        { class: "choice" },
        exact,
        el("span", { class: "choice-body" },
          el("span", { class: "choice-title" }, hasPattern ? "Only this exact subject" : "This rule"),
          ruleEl(p.permission, p.subject)),
      ),
    );
    if (hasPattern) {
      rules.append(
        el(
          "label",
          { class: "choice" },
          el("input", { type: "radio", name, value: "pattern" }),
          el("span", { class: "choice-body" },
            el("span", { class: "choice-title" }, "Everything matching this pattern (broader)"),
            ruleEl(p.permission, p.suggestion)),
        ),
      );
    }
    const confirm = el("button", { type: "button", class: "btn primary" }, "Store rule and allow");
    const back = el("button", { type: "button", class: "btn" }, "Back");
    remember.append(
      el(
        "legend",
        {},
        "Allow always: store a rule for ",
        el("strong", {}, visible(p.user_id || "this user")),
        hasPattern ? ". Later calls the chosen rule matches run without asking." : ". Later calls it matches run without asking.",
      ),
      rules,
      el("div", { class: "actions" }, confirm, back),
    );

    const once = el("button", { type: "button", class: "btn primary" }, "Allow once");
    const always = el("button", { type: "button", class: "btn" }, "Allow always…");
    const deny = el("button", { type: "button", class: "btn danger" }, "Deny");
    choose.append(once, always, deny);

    once.addEventListener("click", () => send(card, item.id, { decision: "once" }, status));
    deny.addEventListener("click", () => send(card, item.id, { decision: "deny" }, status));
    always.addEventListener("click", () => {
      choose.hidden = true;
      remember.hidden = false;
      exact.focus();
    });
    back.addEventListener("click", () => {
      remember.hidden = true;
      choose.hidden = false;
      always.focus();
    });
    confirm.addEventListener("click", () => {
      const picked = remember.querySelector("input:checked");
      send(card, item.id, { decision: picked ? picked.value : "always" }, status);
    });

    const facts = el(
      "dl",
      { class: "facts" },
      el("dt", {}, "Permission"),
      el("dd", {}, el("code", {}, visible(p.permission))),
      el("dt", {}, "Subject"),
      el("dd", {}, p.subject === null || p.subject === undefined
        ? el("em", {}, "the whole permission")
        : el("code", { class: "subject" }, visible(p.subject))),
    );
    fill(
      card,
      cardHead(item, "Approval", "warn", visible(p.tool || "tool")),
      p.summary ? el("p", { class: "summary" }, visible(p.summary)) : null,
      facts,
      choose,
      remember,
      status,
    );
    return card;
  }

  function questionCard(item) {
    const p = item.payload || {};
    const options = Array.isArray(p.options) ? p.options.map(String) : [];
    const multiple = Boolean(p.multiple);
    const status = statusLine();
    const card = el("article", { class: "card question", "aria-labelledby": `title-${item.id}`, "data-id": item.id });
    const name = `q-${item.id}`;
    const inputs = options.map((opt) => el("input", { type: multiple ? "checkbox" : "radio", name, value: opt }));
    const text = el("textarea", { rows: "2", id: `text-${item.id}`, maxlength: "10000" });
    const sendBtn = el("button", { type: "button", class: "btn primary", disabled: true }, "Send answer");
    const dismiss = el("button", { type: "button", class: "btn quiet", title: "The tool is told that nobody answered" }, "Dismiss");

    const ready = () => {
      sendBtn.disabled = !(text.value.trim() || inputs.some((i) => i.checked));
    };
    inputs.forEach((i) => i.addEventListener("change", ready));
    text.addEventListener("input", ready);
    const submit = () => {
      if (sendBtn.disabled) return;
      const choices = inputs.filter((i) => i.checked).map((i) => i.value);
      send(card, item.id, { text: text.value.trim() || null, choices }, status);
    };
    sendBtn.addEventListener("click", submit);
    text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit();
    });
    dismiss.addEventListener("click", () => send(card, item.id, { cancelled: true }, status));

    fill(
      card,
      cardHead(item, "Question", "info", visible(p.question || "")),
      p.tool && p.tool !== "question" ? el("p", { class: "asker" }, `asked by ${visible(p.tool)}`) : null,
      options.length
        ? el(
            "fieldset",
            { class: "choices options" },
            el("legend", { class: "visually-hidden" }, multiple ? "Choose any" : "Choose one"),
            options.map((opt, n) => el("label", { class: "choice" }, inputs[n], el("span", { class: "choice-title" }, visible(opt)))),
          )
        : null,
      el(
        "div",
        { class: "free" },
        el("label", { for: `text-${item.id}` }, options.length ? "Or answer in your own words" : "Your answer"),
        text,
      ),
      el("div", { class: "actions" }, sendBtn, dismiss),
      status,
    );
    return card;
  }

  // A line diff of the person's edit: common head and tail trimmed, an LCS on what is
  // left when it is small (edits are usually local), else the middle as replaced.
  function lineDiff(before, after) {
    const a = before.split("\n");
    const b = after.split("\n");
    let head = 0;
    while (head < a.length && head < b.length && a[head] === b[head]) head++;
    let tail = 0;
    while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
    const x = a.slice(head, a.length - tail);
    const y = b.slice(head, b.length - tail);
    const rows = [];
    if (head) rows.push([" ", a[head - 1]]);
    if (x.length * y.length > 4e6) {
      x.forEach((line) => rows.push(["-", line]));
      y.forEach((line) => rows.push(["+", line]));
    } else {
      const w = y.length + 1;
      const lcs = new Uint32Array((x.length + 1) * w);
      for (let i = x.length - 1; i >= 0; i--) {
        for (let j = y.length - 1; j >= 0; j--) {
          lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
        }
      }
      let i = 0;
      let j = 0;
      while (i < x.length || j < y.length) {
        if (i < x.length && j < y.length && x[i] === y[j]) { rows.push([" ", x[i]]); i++; j++; }
        else if (i < x.length && (j === y.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) rows.push(["-", x[i++]]);
        else rows.push(["+", y[j++]]);
      }
    }
    if (tail) rows.push([" ", a[a.length - tail]]);
    return rows;
  }

  function reviewCard(item) {
    const p = item.payload || {};
    const original = String(p.content ?? "");
    // A textarea turns CRLF (and a lone CR) into LF: compare and diff against the draft
    // as it shows it. The server gives a CRLF draft its CRLF back on save.
    const shownOriginal = original.replace(/\r\n?/g, "\n");
    const offersFeedback = Boolean(p.feedback);
    const status = statusLine();
    const card = el("article", { class: "card review", "aria-labelledby": `title-${item.id}`, "data-id": item.id });
    const lines = shownOriginal.split("\n").length;
    const editor = el("textarea", {
      class: "draft", id: `draft-${item.id}`, spellcheck: "false",
      rows: String(Math.min(24, Math.max(6, lines + 1))), "aria-describedby": `changes-${item.id}`,
    });
    editor.value = shownOriginal;
    const changes = el("div", { class: "changes", id: `changes-${item.id}`, "aria-live": "polite" });
    const passBtn = el("button", { type: "button", class: "btn primary" }, "Pass");
    const saveBtn = el("button", { type: "button", class: "btn", disabled: true }, "Save my edit");
    const resetBtn = el("button", { type: "button", class: "btn quiet", hidden: true }, "Undo my changes");
    const feedbackBtn = offersFeedback ? el("button", { type: "button", class: "btn" }, "Give feedback…") : null;
    const dismiss = el("button", { type: "button", class: "btn quiet", title: "The tool is told the review was dismissed" }, "Dismiss");
    const notes = el("textarea", { rows: "3", id: `feedback-${item.id}`, maxlength: "10000" });
    const sendNotes = el("button", { type: "button", class: "btn primary", disabled: true }, "Send feedback");
    const backBtn = el("button", { type: "button", class: "btn" }, "Back");
    const feedbackBox = el(
      "div", { class: "free", hidden: true },
      el("label", { for: `feedback-${item.id}` }, "What should the agent change?"),
      notes,
      el("div", { class: "actions" }, sendNotes, backBtn),
    );
    const choose = el("div", { class: "actions" }, passBtn, saveBtn, feedbackBtn, resetBtn, dismiss);

    let timer = null;
    const showChanges = () => {
      const edited = editor.value !== shownOriginal;
      saveBtn.disabled = !edited;
      resetBtn.hidden = !edited;
      passBtn.textContent = edited ? "Pass the original" : "Pass";
      passBtn.className = edited ? "btn" : "btn primary";
      saveBtn.className = edited ? "btn primary" : "btn";
      if (!edited) {
        changes.replaceChildren(el("p", { class: "empty" }, "No changes yet: edit the text above to change it before it is used."));
        return;
      }
      const rows = lineDiff(shownOriginal, editor.value).filter((r, n, all) => r[0] !== " " || n === 0 || n === all.length - 1 || all[n - 1][0] !== " " || (all[n + 1] && all[n + 1][0] !== " "));
      changes.replaceChildren(
        el("p", { class: "changes-title" }, "Your changes"),
        el("pre", { class: "diff" }, rows.map(([mark, line]) => el("span", { class: { "+": "add", "-": "del", " ": "ctx" }[mark] }, `${mark} ${visible(line)}`))),
      );
    };
    editor.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(showChanges, 120);
    });
    resetBtn.addEventListener("click", () => {
      editor.value = shownOriginal;
      showChanges();
      editor.focus();
    });
    passBtn.addEventListener("click", () => send(card, item.id, { decision: "pass" }, status));
    saveBtn.addEventListener("click", () => send(card, item.id, { decision: "edit", content: editor.value }, status));
    dismiss.addEventListener("click", () => send(card, item.id, { cancelled: true }, status));
    if (feedbackBtn) {
      feedbackBtn.addEventListener("click", () => {
        choose.hidden = true;
        feedbackBox.hidden = false;
        notes.focus();
      });
      backBtn.addEventListener("click", () => {
        feedbackBox.hidden = true;
        choose.hidden = false;
        feedbackBtn.focus();
      });
      notes.addEventListener("input", () => (sendNotes.disabled = !notes.value.trim()));
      sendNotes.addEventListener("click", () => send(card, item.id, { decision: "feedback", feedback: notes.value.trim() }, status));
    }
    showChanges();

    fill(
      card,
      cardHead(item, "Review", "info", visible(p.title || p.path || "draft")),
      p.tool ? el("p", { class: "asker" }, `asked by ${visible(p.tool)}`, p.path ? [" · file ", el("code", {}, visible(p.path))] : null) : null,
      p.prompt ? el("p", { class: "summary" }, visible(p.prompt)) : null,
      el("label", { class: "draft-label", for: `draft-${item.id}` }, offersFeedback ? "The draft: pass it, edit it here, or give feedback" : "The draft: pass it, or edit it here"),
      editor,
      changes,
      choose,
      feedbackBox,
      status,
    );
    return card;
  }

  async function send(card, id, answer, status) {
    const buttons = [...card.querySelectorAll("button, input, textarea")];
    buttons.forEach((b) => (b.disabled = true));
    card.classList.remove("failed");
    status.textContent = "Sending…";
    const unlock = (message) => {
      status.textContent = message;
      card.classList.add("failed");
      buttons.forEach((b) => (b.disabled = false));
    };
    try {
      const r = await fetch(API + "answer", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id, answer }),
      });
      if (r.ok) {
        status.textContent = "Answered.";
        card.classList.add("done");
        return; // the next `pending` event removes the card
      }
      const body = await r.json().catch(() => ({}));
      if (r.status === 404 || r.status === 409) {
        status.textContent = "Already answered elsewhere, or the call ended.";
        card.classList.add("done");
        setTimeout(() => cards.get(id) === card && removeCard(id, card), 2500);
      } else if (r.status === 401 || r.status === 403) {
        $("signin").hidden = false;
        unlock("Not signed in: nothing was sent.");
      } else {
        unlock(`Not sent: ${body.error || "error " + r.status}`);
      }
    } catch (_) {
      unlock("Could not reach the server: nothing was sent.");
    }
  }

  // ------------------------------------------------------------------ history

  function verdict(item) {
    if (item.status === "expired") return ["timed out", "muted"];
    if (item.status === "cancelled") return ["withdrawn", "muted"];
    const a = item.answer || {};
    if (item.kind === "permission") {
      return {
        once: ["allowed once", "ok"],
        always: ["allowed always", "ok"],
        pattern: ["allowed pattern", "ok"],
        deny: ["denied", "err"],
      }[a.decision] || ["answered", "muted"];
    }
    if (a.cancelled) return ["dismissed", "muted"];
    if (item.kind === "review") {
      return { pass: ["passed", "ok"], edit: ["edited", "ok"], feedback: ["feedback", "ok"] }[a.decision] || ["answered", "muted"];
    }
    return ["answered", "ok"];
  }

  function renderHistory(history) {
    $("history-panel").hidden = history.length === 0;
    $("history-count").textContent = history.length ? String(history.length) : "";
    $("history").replaceChildren(
      ...history.map((item) => {
        const p = item.payload || {};
        const [label, tone] = verdict(item);
        let what;
        if (item.kind === "permission") {
          what = [el("strong", {}, visible(p.tool || "")), " ", el("code", {}, visible(p.subject ?? p.permission ?? ""))];
        } else if (item.kind === "review") {
          const said = (item.answer || {}).feedback;
          what = [el("span", {}, visible(p.title || p.path || "")), said ? el("span", { class: "said" }, " → ", visible(said)) : null];
        } else {
          const a = item.answer || {};
          const said = [...(a.choices || []), ...(a.text ? [a.text] : [])].join(" · ");
          what = [el("span", {}, visible(p.question || "")), said ? el("span", { class: "said" }, " → ", visible(said)) : null];
        }
        return el(
          "li",
          {},
          el("span", { class: `badge ${tone}` }, label),
          el("span", { class: "history-what" }, what),
          el("span", { class: "meta" }, item.answered_by ? `${visible(item.answered_by)} · ` : "", timeEl(item.updated)),
        );
      }),
    );
  }

  // ------------------------------------------------------------------ todos

  // Status -> [mark, words]; the order is the one counts are shown in.
  const TODO_STATUS = {
    in_progress: ["◐", "in progress"],
    pending: ["○", "pending"],
    completed: ["✓", "done"],
    cancelled: ["✗", "cancelled"],
  };

  function todoCounts(counts, cls) {
    const parts = Object.entries(TODO_STATUS)
      .filter(([status]) => counts[status])
      .map(([status, [mark, words]]) =>
        el(
          "span",
          { class: `todo-count ${status}`, title: `${counts[status]} ${words}` },
          el("span", { "aria-hidden": "true" }, mark),
          ` ${counts[status]}`,
          el("span", { class: "visually-hidden" }, ` ${words}`),
        ),
      );
    return el("span", { class: cls }, parts);
  }

  function todoItem(todo) {
    const [mark, words] = TODO_STATUS[todo.status] || ["?", String(todo.status)];
    // While an item is worked on, its "active form" says so (e.g. "Running the tests").
    const doing = todo.status === "in_progress" && todo.active_form;
    return el(
      "li",
      { class: `todo ${todo.status}`, "data-id": todo.id, "data-status": todo.status },
      el("span", { class: "todo-mark", "aria-hidden": "true" }, mark),
      el(
        "span",
        { class: "todo-text", title: doing ? visible(todo.content) : null },
        el("span", { class: "visually-hidden" }, `${words}: `),
        visible(doing ? todo.active_form : todo.content),
      ),
      todo.priority === "high" ? el("span", { class: "badge warn todo-prio" }, "high") : null,
    );
  }

  function renderTodos(lists) {
    lists = (lists || []).filter((l) => l.todos && l.todos.length);
    const total = {};
    for (const list of lists) {
      for (const [status, n] of Object.entries(list.counts || {})) total[status] = (total[status] || 0) + n;
    }
    const items = lists.reduce((n, l) => n + l.todos.length, 0);
    $("todo-panel").hidden = items === 0;
    $("todo-count").textContent = items ? String(items) : "";
    $("todo-counts").replaceChildren(todoCounts(total, "todo-tally"));
    const several = lists.length > 1;
    $("todo-lists").replaceChildren(
      ...lists.map((list) =>
        el(
          "div",
          { class: "todo-user" },
          several
            ? el("h3", { class: "todo-who" }, el("span", {}, visible(list.user_id)), todoCounts(list.counts || {}, "todo-tally"))
            : null,
          el("ol", { class: "todos", "aria-label": several ? `${visible(list.user_id)}'s todo list` : "todo list" }, list.todos.map(todoItem)),
        ),
      ),
    );
  }

  // ------------------------------------------------------------------ calls

  // An audit row of tool "answer" is a person's answer to a call's question or
  // approval (the call's id, the door it came through): said in words, not as args.
  function answerSummary(args) {
    const a = args && typeof args === "object" ? args : {};
    const said = a.answer ?? [...(a.choices || []), ...(a.text ? [a.text] : [])].join(" · ");
    const about = a.subject ?? a.question ?? a.permission ?? "";
    return visible(`${said || "no answer"} · ${a.for_tool || "?"} ${about}`.trim());
  }

  function callRow(call) {
    const ok = call.outcome === "success";
    const isAnswer = call.tool === "answer";
    const search = [call.tool, call.outcome, ok ? "ok" : "failed", call.error_code || "", call.user_id, call.transport]
      .join(" ")
      .toLowerCase();
    let pretty;
    try {
      pretty = JSON.stringify(call.args, null, 2);
    } catch (_) {
      pretty = String(call.args);
    }
    const callId = String(call.call_id ?? "");
    const last = Number(callId.slice(callId.lastIndexOf(".") + 1));
    const kids = el("ol", { class: "calls nested", "aria-label": "calls it made" });
    const count = el("span", { class: "kids", hidden: true });
    const row = el(
      "li",
      {
        class: `call ${ok ? "ok" : "err"}${isAnswer ? " answer" : ""}`,
        "data-search": search,
        "data-id": call.id,
        "data-call-id": callId,
        // Its place among its maker's calls: "a.7" is the 7th call "a" made.
        "data-n": Number.isSafeInteger(last) ? last : Number.MAX_SAFE_INTEGER,
      },
      el(
        "details",
        {},
        el(
          "summary",
          {},
          el("span", { class: "outcome", title: ok ? "success" : "error" }, el("span", { class: "visually-hidden" }, ok ? "success" : "error")),
          el("span", { class: "tool" }, visible(call.tool)),
          ok ? null : el("span", { class: "code" }, visible(call.error_code || "error")),
          el("span", { class: "args" }, isAnswer ? answerSummary(call.args) : argsSummary(call.args)),
          el(
            "span",
            { class: "meta" },
            count,
            call.transport ? el("span", { class: "via", title: "came through" }, visible(call.transport)) : null,
            el("span", { class: "dur" }, duration(call.duration_ms)),
            timeEl(call.ts),
          ),
        ),
        el(
          "div",
          { class: "call-detail" },
          el(
            "dl",
            { class: "facts" },
            el("dt", {}, "User"),
            el("dd", {}, visible(call.user_id)),
            el("dt", {}, "Through"),
            el("dd", {}, visible(call.transport || "?")),
            el("dt", {}, "Call id"),
            el("dd", {}, el("code", {}, visible(callId))),
            el("dt", {}, "At"),
            el("dd", {}, new Date(call.ts * 1000).toLocaleString()),
          ),
          kids,
          el("pre", { class: "json" }, visible(pretty)),
        ),
      ),
    );
    parts.set(row, { kids, count });
    return row;
  }

  // A call made by a call (a batch's, a task's) has the id "<maker's id>.N": "a.b.c"
  // was made by "a.b". Top-level ids have no ".".
  function makerOf(callId) {
    const cut = callId.lastIndexOf(".");
    return cut > 0 ? callId.slice(0, cut) : null;
  }

  // Among its maker's calls in order: by N, a call before the answer given during it.
  function after(a, b) {
    const key = (r) => [Number(r.dataset.n), r.classList.contains("answer") ? 1 : 0, Number(r.dataset.id)];
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] > y[i];
    return false;
  }

  function nest(maker, row) {
    row.classList.remove("waiting");
    const { kids, count } = parts.get(maker);
    let before = null; // calls mostly come in order: look from the end
    for (let c = kids.lastElementChild; c && after(c, row); c = c.previousElementSibling) before = c;
    kids.insertBefore(row, before);
    const n = kids.querySelectorAll(":scope > .call:not(.answer)").length;
    count.textContent = n === 1 ? "1 call" : `${n} calls`;
    count.hidden = n === 0;
  }

  // A call goes under its maker. One that ends before its maker (a batch's, a foreground
  // task's: a call is logged when it ends) waits at the top, hidden for `wait` ms, then
  // shown there until its maker comes; a maker older than the list never does.
  function place(row, waiting) {
    const callId = row.dataset.callId;
    const up = makerOf(callId);
    const maker = up === null ? undefined : byCallId.get(up);
    if (maker) {
      nest(maker, row);
    } else {
      $("calls").prepend(row);
      if (up !== null) {
        row.classList.add("waiting");
        waiting.push(row);
        if (!awaiting.has(up)) awaiting.set(up, []);
        awaiting.get(up).push(row);
      }
    }
    if (row.classList.contains("answer") || !callId || byCallId.has(callId)) return;
    byCallId.set(callId, row);
    for (const kid of awaiting.get(callId) || []) nest(row, kid);
    awaiting.delete(callId);
  }

  function forget(row) {
    for (const r of [row, ...row.querySelectorAll(".call")]) {
      callIds.delete(Number(r.dataset.id));
      const callId = r.dataset.callId;
      if (byCallId.get(callId) === r) byCallId.delete(callId);
      const up = makerOf(callId);
      const rows = up === null ? null : awaiting.get(up);
      if (rows && rows.includes(r)) {
        rows.splice(rows.indexOf(r), 1);
        if (!rows.length) awaiting.delete(up);
      }
    }
    row.remove();
  }

  function addCalls(calls, wait = WAIT_MS) {
    const list = $("calls");
    const waiting = [];
    // `calls` is newest first; insert the oldest first so the newest ends on top.
    for (const call of [...calls].reverse()) {
      if (callIds.has(call.id) || changes().ownLook(call)) continue;
      callIds.add(call.id);
      place(callRow(call), waiting);
    }
    // The oldest top-level rows go, with every call they made.
    while (list.children.length > 1 && (list.children.length > MAX_CALLS || callIds.size > MAX_ROWS)) {
      forget(list.lastElementChild);
    }
    const show = () => {
      waiting.forEach((r) => r.classList.remove("waiting"));
      updateCallCounts();
    };
    if (waiting.length && wait > 0) setTimeout(show, wait);
    else waiting.forEach((r) => r.classList.remove("waiting"));
    if (filterWords.length) refilter();
    else updateCallCounts();
  }

  function matches(row) {
    const text = row.dataset.search;
    return filterWords.every((w) => text.includes(w));
  }

  function applyFilter() {
    filterWords = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    refilter();
  }

  function refilter() {
    for (const row of $("calls").children) filterRow(row, false);
    updateCallCounts();
  }

  // A row shows when it matches, when the row that made it matches (its calls are its
  // context), or when a call it made matches: then it opens to show that call, once
  // (a person who closes it again is not overruled), and closes when the filter moves on.
  function filterRow(row, shown) {
    const self = matches(row);
    let kidMatches = false;
    for (const kid of parts.get(row).kids.children) {
      if (filterRow(kid, shown || self)) kidMatches = true;
    }
    row.hidden = !(shown || self || kidMatches);
    const details = row.firstElementChild;
    if (filterWords.length && kidMatches && !self && !shown) {
      if (!row.dataset.opened && !details.open) {
        details.open = true;
        row.dataset.opened = "filter";
      }
    } else if (row.dataset.opened) {
      details.open = false;
      delete row.dataset.opened;
    }
    return self || kidMatches;
  }

  function updateCallCounts() {
    const rows = [...$("calls").children].filter((r) => !r.classList.contains("waiting"));
    const shown = rows.filter((r) => !r.hidden).length;
    $("calls-empty").hidden = rows.length > 0;
    $("calls-none-match").hidden = rows.length === 0 || shown > 0;
    $("calls-count").textContent = rows.length === 0 ? "" : shown === rows.length ? String(rows.length) : `${shown} of ${rows.length}`;
  }

  // ------------------------------------------------------------------ start

  function tick() {
    for (const t of document.querySelectorAll("time.ago")) t.textContent = ago(Number(t.dataset.ts));
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("filter").addEventListener("input", applyFilter);
    setInterval(tick, 5000);
    connect();
  });
})();
