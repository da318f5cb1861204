// The create-job wizard's only JavaScript: copy buttons and the sticky section index highlight.
// Everything else (dependent fields, rows, live validation, the API panel) is HTMX or plain form posts.
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
