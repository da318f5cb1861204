// The job page's log box (templates/jobs/_logs.html) while its live tail appends lines (hx-swap beforeend).
// A flood (up to ~2,000 lines/s) would keep every line in the page, 100k+ nodes for a long run, and slow the tab;
// so the tail keeps the box to its newest MAX_LINES lines, and the oldest dropped are one "Load older lines" away
// again; older lines the reader loads stay, the box then keeping that many as new lines come.
// The box is aria-live=off (role=log alone is polite, and would read out every line as it comes): a polite
// status line says "N new lines" at most every ANNOUNCE_MS instead.
(function () {
  "use strict";
  var MAX_LINES = 5000;
  var ANNOUNCE_MS = 5000;

  function lines(box) {
    return box.querySelectorAll(":scope > .ln");
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var box = event.detail.target;
    if (box && box.id === "log-lines") box.dataset.before = String(lines(box).length);
    // "Load older lines" puts lines above those read: the reader keeps their place by keeping their distance from
    // the box's end, noted as the answer is swapped in. Noted at the request instead, a live-tail swap while the
    // answer was on its way (every second) took it, and the reader was thrown to the log's start.
    var older = box && box.id === "log-older" && document.getElementById("log-lines");
    if (older) older.dataset.fromEnd = String(older.scrollHeight - older.scrollTop);
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var log = document.getElementById("log-lines");
    if (log && log.dataset.fromEnd) {
      log.scrollTop = log.scrollHeight - Number(log.dataset.fromEnd);
      delete log.dataset.fromEnd;
    }
    var box = event.detail.target;
    if (!box || box.id !== "log-lines") return;  // "Load older lines" swaps its bar, not the box
    var count = lines(box).length;
    var before = Number(box.dataset.before || count);
    announce(box, count - before);
    // The tail alone never grows the box past MAX_LINES, so more lines than that before this swap are older
    // lines the reader loaded: they stay (a poll that brought nothing used to drop them again at once).
    var keep = Math.max(MAX_LINES, before);
    if (count > keep) trim(box, count - keep);
  });

  function announce(box, added) {
    var news = document.getElementById("log-news");
    if (!news) return;
    var waiting = Number(news.dataset.waiting || 0) + Math.max(0, added);
    var now = Date.now();
    if (waiting && now - Number(news.dataset.said || 0) >= ANNOUNCE_MS) {
      news.textContent = waiting + " new line" + (waiting === 1 ? "" : "s");
      news.dataset.said = String(now);
      waiting = 0;
    }
    news.dataset.waiting = String(waiting);
  }

  function trim(box, extra) {
    var height = box.scrollHeight;
    var all = lines(box);
    for (var i = 0; i < extra; i++) all[i].remove();
    // The older bar and any gap note before the first line kept were about the lines dropped.
    var first = lines(box)[0];
    while (first && first.previousElementSibling) first.previousElementSibling.remove();
    // Someone reading further up keeps their place (the content above them shrank).
    if (box.dataset.stick === "no") box.scrollTop -= height - box.scrollHeight;
    box.insertBefore(olderBar(box, lines(box).length), first);
  }

  // The lines kept are the last `kept` lines of the log up to the tail's cursor, so the server's "Load older
  // lines" (until=<cursor>, skip=<kept>) reads exactly those dropped; unless a search filtered them or a burst
  // left a gap among them: the count of lines read is then not known here, so the bar says how to read them.
  function olderBar(box, kept) {
    var bar = document.createElement("div");
    bar.id = "log-older";
    bar.className = "logolder";
    var tail = document.getElementById("log-tail");
    var since = tail && tail.dataset.since;
    if (!since || box.dataset.q || box.querySelector(":scope > .gap")) {
      bar.textContent = "Earlier lines were dropped from this page to keep it fast: download the full log, " +
        "or reload the page, to read them.";
      return bar;
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "link";
    button.textContent = "Load older lines";
    button.setAttribute("hx-get", box.dataset.olderUrl + "?until=" + encodeURIComponent(since) + "&skip=" + kept);
    button.setAttribute("hx-target", "#log-older");
    button.setAttribute("hx-swap", "outerHTML");
    button.setAttribute("hx-disabled-elt", "this");
    bar.appendChild(button);
    if (window.htmx) window.htmx.process(bar);
    return bar;
  }
})();
