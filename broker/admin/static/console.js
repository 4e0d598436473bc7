// kafkette console: keeps a group page live. Every second it reloads the page's live part
// (state, members, offsets and lag, rendered by the server) and appends the coordinator's
// new events to the rebalance timeline, newest first. No framework, nothing loaded from
// elsewhere.
(function () {
  "use strict";
  const live = document.getElementById("live");
  const timeline = document.getElementById("timeline");
  const status = document.getElementById("timeline-status");
  if (!live || !timeline) return;
  const group = timeline.dataset.group;
  const rows = timeline.querySelector("tbody");
  const SKIP = new Set(["seq", "at_ms", "group_id", "kind"]);
  let after = 0;

  function time(ms) {
    const d = new Date(ms);
    return d.toISOString().replace("T", " ").replace("Z", "");
  }

  function cell(text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function addEvent(e) {
    const placeholder = rows.querySelector("tr.empty");
    if (placeholder) placeholder.remove();
    const tr = document.createElement("tr");
    tr.className = "event kind-" + e.kind;
    tr.dataset.seq = e.seq;
    const details = Object.entries(e)
      .filter(([k, v]) => !SKIP.has(k) && v !== null && v !== undefined)
      .map(([k, v]) => k + "=" + v)
      .join("  ");
    tr.append(cell(time(e.at_ms)), cell(e.kind, "kind"), cell(details, "mono"));
    rows.prepend(tr);
  }

  async function refreshLive() {
    const r = await fetch(live.dataset.src, { cache: "no-store" });
    if (r.ok) live.innerHTML = await r.text();
  }

  async function refreshTimeline() {
    const url = "/v1/groups/" + encodeURIComponent(group) + "/events?after=" + after;
    const r = await fetch(url, { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    for (const e of await r.json()) {
      addEvent(e);
      after = Math.max(after, e.seq);
    }
  }

  async function tick() {
    try {
      await Promise.all([refreshLive(), refreshTimeline()]);
      status.textContent = "live · updated " + new Date().toLocaleTimeString();
      document.body.dataset.live = "on";
    } catch (err) {
      status.textContent = "disconnected (" + err.message + "), retrying";
    } finally {
      setTimeout(tick, 1000);
    }
  }
  tick();
})();
