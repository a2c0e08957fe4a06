// The console's script: decisions sent with the CSRF token and the digest the card shows, and live updates
// from the server-sent event stream (new approvals, approvals resolved anywhere, run changes, run events).
(function () {
  "use strict";
  const body = document.body;
  const prefix = body.dataset.prefix;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const runId = body.dataset.run || "";
  let after = Number(body.dataset.after || 0);
  const LINGER_MS = 3000;
  const REFRESH_DECISIONS = new Set(["decision", "paused", "resolved", "tool_call_end", "done", "failed"]);

  function element(html) {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function flash(text) {
    const box = document.getElementById("flash");
    const line = document.createElement("p");
    line.textContent = text;
    box.prepend(line);
    setTimeout(() => line.remove(), 8000);
  }

  async function post(url, data) {
    const resp = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrf},
      body: JSON.stringify(data),
    });
    let answer;
    try { answer = await resp.json(); } catch (e) { answer = {error: `${resp.status} ${resp.statusText}`}; }
    if (!resp.ok) throw new Error(answer.error || `${resp.status} ${resp.statusText}`);
    return answer;
  }

  // -- decisions --------------------------------------------------------------------------------
  async function decide(card, action, always) {
    const note = card.querySelector(".note");
    const buttons = card.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    card.classList.add("deciding");
    note.className = "note";
    note.textContent = action === "approve" ? "Approving…" : "Denying…";
    const data = {digest: card.dataset.digest};
    if (action === "deny") data.reason = card.querySelector("input[name=reason]").value;
    if (always) data.always = true;
    try {
      const answer = await post(`${prefix}/approvals/${encodeURIComponent(card.dataset.id)}/${action}`, data);
      card.classList.add("decided");
      note.textContent = answer.message;
      flash(`${card.dataset.id}: ${answer.message}`);
    } catch (err) {
      note.className = "note error";
      note.textContent = err.message;
      buttons.forEach((b) => { b.disabled = false; });
    } finally {
      card.classList.remove("deciding");
    }
  }

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest("button[data-action]");
    const card = button && button.closest(".approval");
    if (card) decide(card, button.dataset.action, button.dataset.always === "1");
  });

  // -- live updates -----------------------------------------------------------------------------
  function cards() { return Array.from(document.querySelectorAll("#approvals .approval")); }

  function showEmpty() {
    const empty = document.getElementById("no-approvals");
    if (empty) empty.hidden = cards().length > 0;
  }

  function onApproval(d) {
    const list = document.getElementById("approvals");
    if (!list || (runId && d.run_id !== runId)) return;
    if (cards().some((c) => c.dataset.id === d.id)) return;
    list.append(element(d.html));
    showEmpty();
  }

  function onPending(d) {
    const ids = new Set(d.ids);
    for (const card of cards()) {
      if (ids.has(card.dataset.id) || card.dataset.leaving) continue;
      if (card.classList.contains("deciding") || card.classList.contains("decided")) {
        card.dataset.leaving = "1";  // decided here: leave the answer in view for a moment
        setTimeout(() => { card.remove(); showEmpty(); }, LINGER_MS);
        continue;
      }
      flash(`${card.dataset.id} was resolved elsewhere`);
      card.remove();
    }
    showEmpty();
    const count = document.getElementById("pending-count");
    count.textContent = String(ids.size);
    count.classList.toggle("zero", ids.size === 0);
  }

  async function refresh(id, url) {
    const target = document.getElementById(id);
    if (!target) return;
    const resp = await fetch(url, {credentials: "same-origin", headers: {"Accept": "text/html"}});
    if (resp.ok) target.innerHTML = await resp.text();
  }

  function onRuns() {
    const status = body.dataset.status;
    refresh("runs-rows", `${prefix}/runs/table` + (status ? `?status=${encodeURIComponent(status)}` : ""));
  }

  function onStatus(d) {
    const badge = document.getElementById("run-status");
    if (!badge || d.run_id !== runId) return;
    badge.textContent = d.label;
    badge.className = `status s-${d.status}`;
  }

  function onEvent(d) {
    if (d.seq <= after) return;
    after = d.seq;
    const timeline = document.getElementById("timeline");
    if (timeline) timeline.append(element(d.html));
    if (REFRESH_DECISIONS.has(d.type)) refresh("decisions", `${prefix}/runs/${encodeURIComponent(runId)}/decisions`);
  }

  function onTrouble(d) {
    const box = document.getElementById("trouble");
    box.hidden = !d.error;
    box.textContent = d.error || "";
  }

  const query = runId ? `?${new URLSearchParams({run: runId, after: String(after)})}` : "";
  const source = new EventSource(`${prefix}/stream${query}`);
  const handlers = {approval: onApproval, pending: onPending, runs: onRuns, status: onStatus, event: onEvent,
                    trouble: onTrouble};
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (ev) => handler(JSON.parse(ev.data)));
  }
  body.dataset.live = "connecting";
  source.addEventListener("open", () => { body.dataset.live = "open"; });
  source.addEventListener("error", () => { body.dataset.live = "reconnecting"; });
})();
