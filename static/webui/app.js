// The dashboard's shared script: the CSRF token for fetch, and one-key shortcuts.
// Any element with data-key="x" is clicked (or focused, for fields) when x is pressed outside
// a text field; <kbd> hints beside them tell the user. Text is set with textContent only.
(function () {
  "use strict";

  function cookie(name) {
    const found = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
    return found ? decodeURIComponent(found.split("=").slice(1).join("=")) : "";
  }

  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : cookie("csrftoken");
  }

  // fetch with the CSRF token and session cookie; JSON asked for.
  function send(url, options) {
    const opts = Object.assign({ method: "GET", credentials: "same-origin" }, options || {});
    opts.headers = Object.assign({ Accept: "application/json" }, opts.headers || {});
    if (opts.method !== "GET" && opts.method !== "HEAD") opts.headers["X-CSRFToken"] = csrfToken();
    return fetch(url, opts);
  }

  function typing(target) {
    const tag = target.tagName;
    return target.isContentEditable || tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const key = event.key;
    const target = Array.from(document.querySelectorAll("[data-key]")).find(
      (el) => el.dataset.key === key && !el.disabled && el.offsetParent !== null
    ) || Array.from(document.querySelectorAll("[data-key]")).find(
      (el) => el.dataset.key === key && !el.disabled
    );
    if (!target) return;
    event.preventDefault();
    if (typing(target) && target.type !== "file") target.focus();
    else target.click();
  });

  window.dedup = { csrfToken: csrfToken, send: send };
})();
