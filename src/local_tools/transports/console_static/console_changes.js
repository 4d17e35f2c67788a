// The web console's Changes panel: the checkpoints (what each call changed, every
// session's), newest first. A row opens onto its files and diff; Undo shows the plan
// (restore's dry run) and runs the restore only once the person confirms it. Rows are
// kept across reloads (by id), so an open row, its diff and a plan being read survive
// new calls arriving. Paths and summaries come from calls: shown as text, never HTML.
"use strict";

(() => {
  const { API, $, el, fill, visible, timeEl, statusLine } = window.localToolsConsole;

  const CHECKPOINTS_LIMIT = 50;
  const cpRows = new Map(); // checkpoint id -> its row
  let changesTimer = null;
  let changesBusy = false;
  let changesAgain = false;

  async function api(path, body) {
    const init = { credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    try {
      const r = await fetch(API + path, init);
      const data = await r.json().catch(() => ({}));
      // A 403 with a code is a rule's refusal; without one, no console session.
      if (r.status === 401 || (r.status === 403 && !data.code)) $("signin").hidden = false;
      return { ok: r.ok, status: r.status, body: data };
    } catch (_) {
      return { ok: false, status: 0, body: { error: "Could not reach the server." } };
    }
  }

  function scheduleChanges(delay = 400) {
    clearTimeout(changesTimer);
    changesTimer = setTimeout(loadChanges, delay);
  }

  async function loadChanges() {
    if (changesBusy) {
      changesAgain = true; // once the load under way ends
      return;
    }
    changesBusy = true;
    try {
      const r = await api(`checkpoints?limit=${CHECKPOINTS_LIMIT}`);
      $("changes-error").hidden = r.ok;
      if (!r.ok) {
        $("changes-error").textContent = `Could not list the changes: ${visible(r.body.error || "error " + r.status)}`;
        return;
      }
      renderCheckpoints(r.body.checkpoints || []);
    } finally {
      changesBusy = false;
      if (changesAgain) {
        changesAgain = false;
        scheduleChanges(0);
      }
    }
  }

  // A call that may have changed files: not the console's own calls, not an answer.
  function changesFiles(calls) {
    return (calls || []).some((c) => c.transport !== "console" && c.tool !== "answer");
  }

  function renderCheckpoints(items) {
    const list = $("checkpoints");
    const ids = new Set(items.map((cp) => cp.id));
    for (const [id, row] of cpRows) {
      if (!ids.has(id)) {
        row.remove();
        cpRows.delete(id);
      }
    }
    // Existing rows stay where they are (focus, open plans); new ones go in order.
    let prev = null;
    for (const cp of items) {
      let row = cpRows.get(cp.id);
      if (!row) {
        row = checkpointRow(cp);
        cpRows.set(cp.id, row);
      }
      const want = prev ? prev.nextSibling : list.firstChild;
      if (row !== want) list.insertBefore(row, want);
      prev = row;
    }
    $("changes-empty").hidden = items.length > 0;
    $("changes-count").textContent = items.length ? String(items.length) : "";
  }

  function lineCounts(added, removed) {
    return el(
      "span",
      { class: "cp-lines", title: `${added || 0} line(s) added, ${removed || 0} removed` },
      el("span", { class: "plus" }, `+${added || 0}`),
      " ",
      el("span", { class: "minus" }, `−${removed || 0}`),
    );
  }

  function checkpointRow(cp) {
    const files = cp.files || [];
    const ts = Date.parse(cp.time) / 1000;
    const label = visible(cp.summary || files.map((f) => f.path).join(", "));
    const diffBox = el("div", { class: "cp-diff" });
    const planBox = el("div", { class: "cp-plan", hidden: true, role: "region", "aria-label": `Undo #${cp.id}` });
    const undo = el("button", { type: "button", class: "btn danger", "aria-label": `Undo #${cp.id}…` }, "Undo…");
    const details = el(
      "details",
      {},
      el(
        "summary",
        {},
        el("span", { class: "cp-id" }, `#${cp.id}`),
        el("span", { class: "tool" }, visible(cp.tool)),
        el("span", { class: "cp-what", title: label }, label),
        el("span", { class: "meta" }, `${files.length} file${files.length === 1 ? "" : "s"}`, lineCounts(cp.added, cp.removed), isNaN(ts) ? null : timeEl(ts)),
      ),
      el(
        "div",
        { class: "cp-detail" },
        el("ul", { class: "cp-files" }, files.map((f) =>
          el("li", {}, el("span", { class: `badge cp-${f.action}` }, visible(f.action)), el("code", {}, visible(f.path)), lineCounts(f.added, f.removed)))),
        Object.entries(cp.skipped || {}).map(([path, why]) =>
          el("p", { class: "cp-skipped" }, "Not kept (cannot be undone): ", el("code", {}, visible(path)), ` ${visible(why)}`)),
        el("div", { class: "actions" }, undo),
        planBox,
        diffBox,
      ),
    );
    let diffLoaded = false;
    details.addEventListener("toggle", () => {
      if (details.open && !diffLoaded) {
        diffLoaded = true;
        loadDiff(cp.id, diffBox);
      }
    });
    undo.addEventListener("click", () => showPlan(cp.id, planBox, undo));
    return el("li", { class: "checkpoint", "data-id": cp.id }, details);
  }

  async function loadDiff(id, box) {
    box.replaceChildren(el("p", { class: "empty" }, "Loading the diff…"));
    const r = await api(`checkpoints/${id}/diff`);
    if (!r.ok) {
      box.replaceChildren(el("p", { class: "failed-text" }, `No diff: ${visible(r.body.error || "error " + r.status)}`));
      return;
    }
    const text = r.body.diff || "";
    if (!text) {
      box.replaceChildren(el("p", { class: "empty" }, "No text changes to show (binary files, folders, or modes only)."));
      return;
    }
    const lines = text.replace(/\n$/, "").split("\n");
    const kind = (line) => {
      if (/^(diff |index |--- |\+\+\+ |new file|deleted file|old mode|new mode|similarity|rename |Binary )/.test(line)) return "file";
      if (line.startsWith("@@")) return "hunk";
      if (line.startsWith("+")) return "add";
      if (line.startsWith("-")) return "del";
      return "ctx";
    };
    box.replaceChildren();
    fill(
      box,
      el("pre", { class: "udiff", "aria-label": `diff of #${id}` }, lines.map((line) => el("span", { class: kind(line) }, visible(line)))),
      r.body.truncated
        ? el("p", { class: "empty" }, "The diff is long: cut here.", r.body.full_output_path ? [" The whole of it is in ", el("code", {}, visible(r.body.full_output_path)), "."] : null)
        : null,
    );
  }

  const STEP_WORDS = { create: "bring back", replace: "put back", delete: "delete", unchanged: "unchanged" };

  async function showPlan(id, box, undo) {
    undo.disabled = true;
    box.hidden = false;
    box.classList.remove("failed");
    box.replaceChildren(el("p", { class: "empty" }, "Working out what undo would do…"));
    const r = await api(`checkpoints/${id}/plan`, {});
    if (!r.ok) {
      box.classList.add("failed");
      box.replaceChildren(el("p", { class: "failed-text" }, `No plan: ${visible(r.body.error || "error " + r.status)}`), closeButton(box, undo));
      return;
    }
    renderPlan(id, box, undo, r.body, null);
  }

  function closeButton(box, undo, text = "Close") {
    const close = el("button", { type: "button", class: "btn" }, text);
    close.addEventListener("click", () => {
      box.hidden = true;
      box.replaceChildren();
      undo.disabled = false;
      undo.focus();
    });
    return close;
  }

  function renderPlan(id, box, undo, plan, note) {
    const steps = (plan.plan || []).filter((s) => s.action !== "unchanged");
    const conflicts = steps.filter((s) => s.conflict);
    const later = (plan.undone || []).filter((n) => n !== id);
    const status = statusLine();
    const confirm = el("button", { type: "button", class: "btn danger" }, "Confirm undo");
    const force = el("input", { type: "checkbox" });
    const head = el(
      "p",
      { class: "cp-plan-head" },
      el("strong", {}, `Undo #${id}`),
      later.length ? ` and the ${later.length} later call${later.length === 1 ? "" : "s"} (${later.map((n) => "#" + n).join(", ")})` : "",
      steps.length ? ": the files go back to how they were before it." : "",
    );
    const rows = steps.map((s) =>
      el(
        "li",
        { class: s.conflict ? "conflict" : null },
        el("span", { class: `badge cp-step-${s.action}` }, STEP_WORDS[s.action] || visible(s.action)),
        el("code", {}, visible(s.path)),
        s.kind && s.kind !== "file" ? el("span", { class: "meta" }, ` (${visible(s.kind)})`) : null,
        s.conflict ? el("span", { class: "cp-conflict" }, visible(s.conflict)) : null,
      ),
    );
    const ready = () => (confirm.disabled = conflicts.length > 0 && !force.checked);
    force.addEventListener("change", ready);
    confirm.addEventListener("click", () => runRestore(id, box, undo, plan, force.checked, status));
    box.replaceChildren();
    fill(
      box,
      note ? el("p", { class: "failed-text" }, note) : null,
      head,
      steps.length ? el("ul", { class: "cp-steps" }, rows) : el("p", { class: "empty" }, "Nothing to change: the files are already as they were."),
      conflicts.length
        ? el(
            "div",
            { class: "cp-warning" },
            el("p", {}, `${conflicts.length} file${conflicts.length === 1 ? " was" : "s were"} changed since (by hand or by another call): undoing overwrites ${conflicts.length === 1 ? "that change" : "those changes"}.`),
            el("label", { class: "choice" }, force, el("span", { class: "choice-title" }, "Overwrite the files changed since")),
          )
        : null,
      el("div", { class: "actions" }, steps.length ? confirm : null, closeButton(box, undo, steps.length ? "Cancel" : "Close")),
      status,
    );
    ready();
    (steps.length ? (confirm.disabled ? force : confirm) : box.querySelector("button")).focus();
  }

  async function runRestore(id, box, undo, plan, force, status) {
    const buttons = [...box.querySelectorAll("button, input")];
    buttons.forEach((b) => (b.disabled = true));
    status.textContent = "Undoing…";
    const r = await api(`checkpoints/${id}/restore`, { undone: plan.undone || [], force });
    if (r.ok) {
      const failed = Object.entries(r.body.failed || {});
      const done = (r.body.plan || []).filter((s) => s.action !== "unchanged").length - failed.length;
      box.replaceChildren();
      fill(
        box,
        el("p", { class: "cp-done", role: "status" }, `Undone: ${done} file${done === 1 ? "" : "s"} put back. The undo is itself listed above: undo it to redo.`),
        failed.length
          ? el("ul", { class: "cp-steps" }, failed.map(([path, why]) => el("li", { class: "conflict" }, el("code", {}, visible(path)), el("span", { class: "cp-conflict" }, `not restored: ${visible(why)}`))))
          : null,
        el("div", { class: "actions" }, closeButton(box, undo)),
      );
      scheduleChanges(0);
      return;
    }
    if (r.body.code === "PLAN_CHANGED" && r.body.details && r.body.details.plan) {
      renderPlan(id, box, undo, r.body.details.plan, "Other calls changed files since: this is the new plan. Nothing was undone yet.");
      scheduleChanges(0);
      return;
    }
    if (r.body.code === "CONFLICT") {
      // A file changed between the plan and the click: show the plan as it is now.
      const fresh = await api(`checkpoints/${id}/plan`, {});
      if (fresh.ok) {
        renderPlan(id, box, undo, fresh.body, "A file changed since you looked: this is the plan now. Nothing was undone yet.");
        return;
      }
    }
    status.textContent = `Nothing was undone: ${visible(r.body.error || "error " + r.status)}`;
    box.classList.add("failed");
    buttons.forEach((b) => (b.disabled = false));
  }

  // The Changes panel's own looking (its list, a diff, a plan) is audited like any call
  // but is not news to the person who clicked: left out of the log here. An undo is shown.
  function ownLook(call) {
    if (call.transport !== "console") return false;
    const dryRun = call.args && typeof call.args === "object" && call.args.dry_run === true;
    return call.tool === "checkpoint_list" || call.tool === "checkpoint_diff" || (call.tool === "restore" && dryRun);
  }

  window.localToolsConsole.changes = { schedule: scheduleChanges, filesChanged: changesFiles, ownLook };

  document.addEventListener("DOMContentLoaded", () => {
    $("changes-refresh").addEventListener("click", () => scheduleChanges(0));
  });
})();
