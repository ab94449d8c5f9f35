// The upload page: files chosen or dropped are listed, and sent one by one when the form is
// submitted (once: choosing a file no longer sends it as well), with the source and date; then
// each upload's status is polled until it is done or failed. Every text from the server is
// set with textContent.
(function () {
  "use strict";

  const form = document.getElementById("upload-form");
  const input = document.getElementById("id_files");
  const zone = document.getElementById("dropzone");
  const list = document.getElementById("uploads");
  const template = document.getElementById("upload-row-template");
  const errorList = document.getElementById("upload-errors");
  const chosen = document.getElementById("upload-chosen");
  const source = document.getElementById("id_source");
  const published = document.getElementById("id_published");
  if (!form || !input || !list || !template) return;
  input.dataset.key = "u";
  const POLL_MS = 700;

  function showErrors(messages) {
    errorList.replaceChildren();
    messages.forEach(function (text) {
      const li = document.createElement("li");
      li.textContent = text;
      errorList.appendChild(li);
    });
    errorList.hidden = messages.length === 0;
  }

  function fill(row, data) {
    row.dataset.upload = data.id;
    row.dataset.statusUrl = data.status_url;
    row.className = "upload state-" + data.state;
    row.querySelectorAll("[data-field]").forEach(function (el) {
      const name = el.dataset.field;
      if (name === "errors") return;
      if (name === "error_count") el.textContent = String((data.errors || []).length);
      else if (name in data && data[name] !== null) el.textContent = String(data[name]);
      if (el.dataset.href && data[el.dataset.href]) el.setAttribute("href", data[el.dataset.href]);
    });
    const bar = row.querySelector(".bar");
    bar.setAttribute("aria-valuenow", String(data.percent));
    row.querySelector(".bar-fill").style.width = data.percent + "%";
    const message = row.querySelector("[data-field=message]");
    message.hidden = !data.message;
    const errors = data.errors || [];
    const details = row.querySelector(".row-errors");
    const body = row.querySelector("[data-field=errors]");
    body.replaceChildren();
    errors.forEach(function (error) {
      const tr = document.createElement("tr");
      const at = document.createElement("td");
      const text = document.createElement("td");
      at.textContent = String(error.row);
      text.textContent = String(error.message);
      tr.append(at, text);
      body.appendChild(tr);
    });
    details.hidden = errors.length === 0;
    if (data.finished) {
      row.dataset.finished = "1";
      if (errors.length) details.open = true;
    }
  }

  function poll(row) {
    if (row.dataset.finished === "1" || !row.dataset.statusUrl) return;
    window.dedup.send(row.dataset.statusUrl).then(function (response) {
      if (!response.ok) throw new Error(String(response.status));
      return response.json();
    }).then(function (data) {
      fill(row, data);
      if (!data.finished) setTimeout(function () { poll(row); }, POLL_MS);
    }).catch(function () {
      setTimeout(function () { poll(row); }, POLL_MS * 4);
    });
  }

  function addRow(data) {
    const empty = document.getElementById("uploads-empty");
    if (empty) empty.remove();
    const row = template.content.firstElementChild.cloneNode(true);
    fill(row, data);
    list.prepend(row);
    poll(row);
  }

  function showChosen() {
    const names = Array.from(input.files).map(function (file) { return file.name; });
    chosen.textContent = names.length ? form.dataset.msgChosen + " " + names.join(", ") : "";
    chosen.hidden = names.length === 0;
  }

  function sendFiles(files) {
    if (!files.length) {
      showErrors([form.dataset.msgNone]);
      return;
    }
    // Taken out of the field at once: a second press sends nothing twice.
    files = Array.from(files);
    input.value = "";
    showChosen();
    showErrors([]);
    form.classList.add("busy");
    // Each file on its own request, so one bad file does not stop the others; messages are
    // shown in the order the files were chosen.
    const sends = Array.from(files).map(function (file) {
      const body = new FormData();
      body.append("files", file, file.name);
      if (source) body.append("source", source.value);
      if (published) body.append("published", published.value);
      return window.dedup.send(form.action, { method: "POST", body: body })
        .then(function (response) { return response.json(); })
        .then(function (answer) {
          (answer.uploads || []).forEach(addRow);
          return answer.errors || [];
        })
        .catch(function () { return [file.name + ": " + form.dataset.msgNetwork]; });
    });
    Promise.all(sends).then(function (problems) {
      form.classList.remove("busy");
      showErrors([].concat.apply([], problems));
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    sendFiles(input.files);
  });
  input.addEventListener("change", showChosen);
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) {
      event.preventDefault();
      zone.classList.add("over");
    });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    input.files = event.dataTransfer.files;
    showChosen();
  });

  list.querySelectorAll(".upload").forEach(poll);
})();
