// The create-job wizard's only JavaScript: copy buttons, the sticky section index highlight, the Secret tick of
// environment variables, and the list of fields the user changed. Everything else (dependent fields, rows, live
// validation, the API panel) is HTMX or plain form posts.
(function () {
  "use strict";

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* the text is still exposed below */ }
    document.body.removeChild(area);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent;
    // What was copied last, for people and tests where the clipboard is not readable.
    window.wizardCopied = text;
    var done = function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else {
      fallbackCopy(text);
      done();
    }
  });

  // Secret variables. The server never writes a secret's value into a page, so a re-rendered section keeps a typed
  // one only through hx-preserve, which matches the old and new input by id. The tick therefore changes the input
  // in place (no request): password type, and the id the server gives a secret's value (secret_value_name in
  // jobs/forms/environment.py: row prefix + FNV-1a of the variable's name), kept in step as the name is edited.
  var ROW_FIELD = /^(environment-envs-\d+)-(key|value|secret)$/;

  function nameTag(key) {
    var bytes = new TextEncoder().encode(key.trim());
    var tag = 0x811c9dc5;
    for (var i = 0; i < bytes.length; i++) tag = Math.imul(tag ^ bytes[i], 0x01000193) >>> 0;
    return ("0000000" + tag.toString(16)).slice(-8);
  }

  function rowField(form, prefix, name) {
    return form.querySelector('[name="' + prefix + "-" + name + '"]');
  }

  function syncSecretValue(form, prefix) {
    var value = rowField(form, prefix, "value");
    var tick = rowField(form, prefix, "secret");
    var key = rowField(form, prefix, "key");
    if (!value || !tick || !key) return;
    var secret = tick.checked;
    var id = "id_" + prefix + "-value" + (secret ? "-" + nameTag(key.value) : "");
    if (value.id !== id) {
      var label = form.querySelector('label[for="' + value.id + '"]');
      if (label) label.htmlFor = id;
      value.id = id;
    }
    if (secret) {
      value.type = "password";
      value.setAttribute("autocomplete", "new-password");
      value.setAttribute("hx-preserve", "true");
    } else {
      value.type = "text";
      value.removeAttribute("autocomplete");
      value.removeAttribute("hx-preserve");
    }
  }

  function onRowField(event) {
    var target = event.target;
    var found = target && target.name && ROW_FIELD.exec(target.name);
    if (!found || !target.form || found[2] === "value") return;
    var tick = rowField(target.form, found[1], "secret");
    if (found[2] === "key" && !(tick && tick.checked)) return;
    syncSecretValue(target.form, found[1]);
  }
  document.addEventListener("change", onRowField);
  document.addEventListener("input", onRowField);

  // A "type it again" note is for a value the page lost; one the swap kept (hx-preserve) needs none.
  function hideKeptReprompts() {
    document.querySelectorAll('[id^="reprompt-environment-envs-"]').forEach(function (note) {
      var input = document.getElementById("id_" + note.id.slice("reprompt-".length));
      note.hidden = !!(input && input.value);
    });
  }
  document.addEventListener("htmx:afterSettle", hideKeptReprompts);

  // The fields the user changed, posted with every request of the form: a section re-rendered because a choice
  // changed shows errors only at these and at those it showed already (jobs/wizard.py, wizard_section). Capture
  // phase: the list is up to date before htmx reads the form for the request this same change sends.
  function onTouched(event) {
    var target = event.target;
    var form = target && target.form;
    if (!form || form.id !== "wizard-form" || !target.name || target.name.charAt(0) === "_") return;
    var box = document.getElementById("wizard-touched");
    if (!box) return;
    var names = box.value ? box.value.split(" ") : [];
    if (names.indexOf(target.name) === -1) {
      names.push(target.name);
      box.value = names.join(" ");
    }
  }
  document.addEventListener("input", onTouched, true);
  document.addEventListener("change", onTouched, true);

  var observer = null;
  function watchSections() {
    if (!("IntersectionObserver" in window)) return;
    if (observer) observer.disconnect();
    observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        document.querySelectorAll(".wizard-index a").forEach(function (link) {
          link.classList.toggle("current", link.getAttribute("data-section") === entry.target.id);
        });
      });
    }, { rootMargin: "-20% 0px -70% 0px" });
    document.querySelectorAll(".wizard-section").forEach(function (section) { observer.observe(section); });
  }
  document.addEventListener("DOMContentLoaded", watchSections);
  // Swapped sections are new elements: observe them again.
  document.addEventListener("htmx:afterSettle", watchSections);
})();
