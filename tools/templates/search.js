/* Full-text search over an index built at build time (assets/search-index.js); no network, works from file://.
   The index is the site's heaviest file: it loads only when the reader focuses or types in the search box (a script
   tag added then, which file:// pages allow where fetch() is refused), not on every page. Its words come from the
   page (body[data-text-*]), and so does its language (<html lang>, else the index's): Chinese and Japanese write
   words without spaces, so a query in those scripts is cut into words by the browser's Intl.Segmenter for that
   language, and each word is found as a substring of a section (the index keeps adjacent characters adjacent). */
(function () {
  "use strict";
  var input = document.getElementById("search-input");
  var list = document.getElementById("search-results");
  if (!input || !list) { return; }
  var root = document.body.getAttribute("data-root") || "";
  var noneText = document.body.getAttribute("data-text-search-none") || "{query}";
  var UNSPACED = /[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u{20000}-\u{3134f}]/u;
  var language = document.documentElement.getAttribute("lang") || "";
  var segmenter = null;
  var prepared = [];
  var loading = false;
  var ready = false;

  function loadIndex() {
    if (loading) { return; }
    loading = true;
    var script = document.createElement("script");
    script.src = document.body.getAttribute("data-search-index") || root + "assets/search-index.js";
    script.onload = function () {
      var index = window.BOOK_SEARCH_INDEX || {};
      language = language || index.language || "";
      prepared = (index.sections || []).map(function (entry) {
        return { entry: entry, title: lower(entry.t || ""), text: lower(entry.x || "") };
      });
      ready = true;
      if (input.value) { show(input.value); }  // what the reader typed while it loaded
    };
    document.body.appendChild(script);
  }

  function lower(text) {
    try { return text.toLocaleLowerCase(language || undefined); } catch (e) { return text.toLowerCase(); }
  }

  function wordsOf(piece) {
    if (!segmenter) {
      try { segmenter = new Intl.Segmenter(language || undefined, { granularity: "word" }); } catch (e) { segmenter = false; }
    }
    if (!segmenter) { return [piece]; }  // no Intl.Segmenter: the piece is one word, found as a substring
    var found = [];
    Array.from(segmenter.segment(piece)).forEach(function (part) {
      if (part.isWordLike) { found.push(part.segment); }
    });
    return found.length ? found : [piece];
  }

  /* The query's words: split at spaces, as before, and a piece in Chinese or Japanese script into its words. */
  function words(query) {
    var found = [];
    lower(query).split(/\s+/).forEach(function (piece) {
      if (!piece) { return; }
      if (UNSPACED.test(piece)) { found.push.apply(found, wordsOf(piece)); } else { found.push(piece); }
    });
    return found;
  }

  /* The whole query as the text would hold it (no space between two Chinese or Japanese characters), when it has
     such characters: a section holding it as it was typed ranks first. */
  function phrase(query) {
    var text = lower(query.trim()).replace(/\s+/g, " ");
    return UNSPACED.test(text) ? text.replace(new RegExp("(" + UNSPACED.source + ")\\s+(?=" + UNSPACED.source + ")", "gu"), "$1") : "";
  }

  function snippet(text, query) {
    var low = lower(text);
    var candidates = [phrase(query)].concat(words(query));
    var at = -1, word = "";
    for (var i = 0; i < candidates.length && at < 0; i++) {
      if (candidates[i]) { word = candidates[i]; at = low.indexOf(word); }
    }
    if (at < 0) { return text.slice(0, 140); }
    var wide = UNSPACED.test(word) ? 2 : 1;  // a Chinese or Japanese character is about two letters wide
    var start = Math.max(0, at - Math.round(60 / wide));
    return (start > 0 ? "…" : "") + text.slice(start, at + Math.round(80 / wide)) + "…";
  }

  function search(query) {
    var terms = words(query);
    if (terms.length === 0) { return []; }
    var whole = phrase(query);
    var hits = [];
    prepared.forEach(function (item) {
      var score = 0;
      for (var i = 0; i < terms.length; i++) {
        var inTitle = item.title.indexOf(terms[i]) >= 0;
        var inText = item.text.indexOf(terms[i]) >= 0;
        if (!inTitle && !inText) { return; }
        score += inTitle ? 10 : 1;
      }
      if (whole && (item.title.indexOf(whole) >= 0 || item.text.indexOf(whole) >= 0)) { score += 5; }
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
      none.textContent = noneText.split("{query}").join(query.trim());
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
      text.textContent = snippet(entry.x || "", query);
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
