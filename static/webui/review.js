// The review pages' script: live re-draw of the queue, row and change navigation, shortcuts.
// Server-rendered HTML is parsed with DOMParser and moved in as nodes; text is never set
// through innerHTML (article text is untrusted).
(function () {
  "use strict";

  function typing(target) {
    const tag = target.tagName;
    return target.isContentEditable || tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
  }

  // --- queue: sliders and filters re-draw the list --------------------------------------------
  const form = document.getElementById("queue-form");
  if (form) {
    const results = document.getElementById("queue-results");
    const bars = { near: form.elements.near, partial: form.elements.partial };
    let timer = null;
    let asked = 0;

    function query() {
      const params = new URLSearchParams();
      for (const [name, value] of new FormData(form)) if (value !== "") params.set(name, value);
      return params.toString();
    }

    function redraw() {
      const q = query();
      const number = ++asked;
      history.replaceState(null, "", "?" + q);
      const current = results.querySelector(".results");
      if (current) current.classList.add("loading");
      fetch(form.dataset.results + "?" + q, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then((response) => response.text().then((html) => ({ ok: response.ok, html: html })))
        .then(function (answer) {
          if (number !== asked) return; // a later move is on its way
          const page = new DOMParser().parseFromString(answer.html, "text/html");
          const fresh = page.querySelector(".results") || page.querySelector(".msg.error");
          if (fresh) results.replaceChildren(document.importNode(fresh, true));
        })
        .catch(function () {
          if (current) current.classList.remove("loading");
        });
    }

    function later() {
      for (const name in bars) {
        document.getElementById(name + "-out").textContent = Number(bars[name].value).toFixed(2);
      }
      clearTimeout(timer);
      timer = setTimeout(redraw, 100);
    }

    for (const name in bars) bars[name].addEventListener("input", later);
    form.querySelectorAll("select, input[type=date]").forEach((el) => el.addEventListener("change", later));
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      later();
    });
    document.addEventListener("keydown", function (event) {
      if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
      // [ ] move the near copies' bar, { } the partial copies', by 0.05 (the range clamps).
      const keys = { "[": ["near", -1], "]": ["near", 1], "{": ["partial", -1], "}": ["partial", 1] };
      const hit = keys[event.key];
      if (hit) {
        const bar = bars[hit[0]];
        bar.value = (Number(bar.value) + hit[1] * 0.05).toFixed(2);
        later();
      }
    });
  }

  // --- rows: j/k move, x/d/n/o/z/c act on the current row -------------------------------------
  let index = -1;

  function rows() {
    return Array.from(document.querySelectorAll("[data-row]"));
  }

  function move(step) {
    const all = rows();
    if (!all.length) return false;
    all.forEach((row) => row.classList.remove("current"));
    index = Math.max(0, Math.min(all.length - 1, index + step));
    const row = all[index];
    row.classList.add("current");
    row.scrollIntoView({ block: "nearest" });
    return true;
  }

  function act(name) {
    const row = rows()[index];
    const target = row && row.querySelector('[data-act="' + name + '"]');
    if (!target || target.disabled) return false;
    if (name === "x") target.checked = !target.checked;
    else target.click();
    return true;
  }

  // --- side by side: j/k jump between changes -----------------------------------------------
  let change = -1;

  function jump(step) {
    const marks = Array.from(document.querySelectorAll(".sides mark"));
    if (!marks.length) return false;
    marks.forEach((m) => m.classList.remove("current"));
    change = (change + step + marks.length) % marks.length;
    marks[change].classList.add("current");
    marks[change].scrollIntoView({ block: "center" });
    return true;
  }

  // A decision reloads the page: come back to the row it was made on (its id in the address's
  // fragment), current again, so that j/k go on from there.
  const reviewForm = document.getElementById("review-form");
  if (reviewForm) {
    reviewForm.addEventListener("submit", function (event) {
      const here = reviewForm.querySelector("[data-here]");
      const row = event.submitter && event.submitter.closest("[data-row]");
      if (here && row && row.id) here.value = here.value.split("#")[0] + "#" + row.id;
    });
    const back = location.hash && document.getElementById(location.hash.slice(1));
    if (back && back.matches("[data-row]")) {
      index = rows().indexOf(back);
      move(0);
      // After the browser's own jump to the fragment, which leaves the row at the very top.
      window.addEventListener("load", () => back.scrollIntoView({ block: "center" }));
    }
  }

  const selectAll = document.querySelector("[data-select-all]");
  if (selectAll) {
    selectAll.addEventListener("change", function () {
      document.querySelectorAll('input[name="pair"]').forEach((box) => (box.checked = selectAll.checked));
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    let done = false;
    if (key === "?") {
      const help = document.getElementById("keys-help");
      if (help) {
        if (help.open) help.close();
        else help.showModal();
        done = true;
      }
    } else if (key === "j" || key === "k") {
      const step = key === "j" ? 1 : -1;
      done = rows().length ? move(step) : jump(step);
    } else if (key === "Enter" && index >= 0) {
      const link = rows()[index].querySelector("a");
      if (link) {
        link.click();
        done = true;
      }
    } else if ("xdnocz".includes(key) && key.length === 1 && index >= 0) {
      done = act(key);
    }
    if (done) event.preventDefault();
  });
})();
