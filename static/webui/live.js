// Live updates without a reload: the queue polls for matches found since it was drawn and
// shows a badge "N new" that re-draws the list only when clicked (the page never moves under
// the editor's hands); a cluster page polls for decisions other editors made on its articles
// and lists them. Interval: DEDUP_LIVE_POLL_MS. Text is set with textContent only.
(function () {
  "use strict";

  function poll(el, ask, answer) {
    const every = Math.max(1000, Number(el.dataset.pollMs) || 10000);
    let busy = false;
    function tick() {
      if (busy || document.hidden) return;
      busy = true;
      fetch(el.dataset.url + "?" + ask().toString(), {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      })
        .then((response) => (response.ok ? response.json() : null))
        .then((data) => { if (data) answer(data); })
        .catch(() => {})
        .finally(() => { busy = false; });
    }
    setInterval(tick, every);
  }

  const badge = document.querySelector("[data-live=queue]");
  if (badge) {
    let shown = Number(badge.dataset.cursor) || 0; // what the list on screen includes
    poll(badge, () => new URLSearchParams({ after: shown }), function (data) {
      if (!data.matches) return;
      badge.dataset.latest = data.cursor;
      badge.textContent = data.matches === 1
        ? badge.dataset.one
        : badge.dataset.many.replace("{n}", data.matches);
      badge.hidden = false;
    });
    badge.addEventListener("click", function () {
      shown = Number(badge.dataset.latest) || shown;
      badge.hidden = true;
      const form = document.getElementById("queue-form");
      if (form && form.requestSubmit) form.requestSubmit(); // review.js re-draws the list
      else window.location.reload();
    });
  }

  const notice = document.querySelector("[data-live=cluster]");
  if (notice) {
    let after = Number(notice.dataset.cursor) || 0;
    const ids = Array.from(document.querySelectorAll("tr[data-row]"))
      .map((row) => row.id.replace(/^a/, ""))
      .filter((id) => /^\d+$/.test(id))
      .slice(0, 500);
    poll(notice, () => new URLSearchParams({ after: after, ids: ids.join(",") }), function (data) {
      after = data.cursor;
      const list = notice.querySelector("ul");
      for (const d of data.decisions) {
        const item = document.createElement("li");
        const pair = d.b ? "#" + d.a + " ~ #" + d.b : "#" + d.a;
        item.textContent = pair + ": " + d.label + (d.by ? " (" + notice.dataset.by + " " + d.by + ")" : "");
        list.appendChild(item);
        const row = document.getElementById("a" + (d.b || d.a));
        if (row) row.classList.add("changed-elsewhere");
      }
      if (data.decisions.length) notice.hidden = false;
    });
  }
})();
