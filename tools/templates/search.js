/* Full-text search over an index built at build time (assets/search-index.js); no network, works from file://.
   The index is the site's heaviest file: it loads only when the reader focuses or types in the search box (a script
   tag added then, which file:// pages allow where fetch() is refused), not on every page. */
(function () {
  "use strict";
  var input = document.getElementById("search-input");
  var list = document.getElementById("search-results");
  if (!input || !list) { return; }
  var root = document.body.getAttribute("data-root") || "";
  var prepared = [];
  var loading = false;
  var ready = false;

  function loadIndex() {
    if (loading) { return; }
    loading = true;
    var script = document.createElement("script");
    script.src = document.body.getAttribute("data-search-index") || root + "assets/search-index.js";
    script.onload = function () {
      prepared = (window.BOOK_SEARCH_INDEX || []).map(function (entry) {
        return { entry: entry, title: (entry.t || "").toLowerCase(), text: (entry.x || "").toLowerCase() };
      });
      ready = true;
      if (input.value) { show(input.value); }  // what the reader typed while it loaded
    };
    document.body.appendChild(script);
  }

  function words(query) {
    return query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
  }

  function snippet(text, word) {
    var at = text.toLowerCase().indexOf(word);
    if (at < 0) { return text.slice(0, 140); }
    var start = Math.max(0, at - 60);
    return (start > 0 ? "…" : "") + text.slice(start, at + 80) + "…";
  }

  function search(query) {
    var terms = words(query);
    if (terms.length === 0) { return []; }
    var hits = [];
    prepared.forEach(function (item) {
      var score = 0;
      for (var i = 0; i < terms.length; i++) {
        var inTitle = item.title.indexOf(terms[i]) >= 0;
        var inText = item.text.indexOf(terms[i]) >= 0;
        if (!inTitle && !inText) { return; }
        score += inTitle ? 10 : 1;
      }
      hits.push({ score: score, item: item });
    });
    hits.sort(function (a, b) { return b.score - a.score; });
    return hits.slice(0, 20);
  }

  function show(query) {
    if (!ready) { return; }  // not "no match" before the index is there: its onload shows the results
    var hits = search(query);
    list.innerHTML = "";
    if (!query.trim()) { list.hidden = true; return; }
    if (hits.length === 0) {
      var none = document.createElement("li");
      none.className = "search-none";
      none.textContent = "No section mentions “" + query.trim() + "”.";
      list.appendChild(none);
    }
    hits.forEach(function (hit) {
      var entry = hit.item.entry;
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = root + entry.p + (entry.a ? "#" + entry.a : "");
      var strong = document.createElement("strong");
      strong.textContent = entry.t;
      var chapter = document.createElement("span");
      chapter.className = "search-chapter";
      chapter.textContent = entry.c !== entry.t ? entry.c : "";
      var text = document.createElement("span");
      text.className = "search-snippet";
      text.textContent = snippet(entry.x || "", words(query)[0]);
      a.appendChild(strong);
      a.appendChild(chapter);
      a.appendChild(text);
      li.appendChild(a);
      list.appendChild(li);
    });
    list.hidden = false;
  }

  input.addEventListener("focus", loadIndex);
  input.addEventListener("input", function () { loadIndex(); show(input.value); });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      var first = list.querySelector("a");
      if (first) { window.location.href = first.href; }
    } else if (event.key === "Escape") {
      input.value = ""; show("");
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "/" && document.activeElement !== input) { event.preventDefault(); input.focus(); }
  });
})();
