/* Full-text search over an index built at build time (assets/search-index.js and its parts in assets/search/); no
   network, works from file://. The index loads only when the reader focuses or types in the search box (script tags
   added then, which file:// pages allow where fetch() is refused), not on every page, and only the parts a query
   needs: the gram sets of its words, then the sections that can rank in the top twenty (tools/render/site/search.py).
   Its words come from the page (body[data-text-*]), and so does its language (<html lang>, else the index's):
   Chinese and Japanese write words without spaces, so a query in those scripts is cut into words by the browser's
   Intl.Segmenter for that language, and each word is found as a substring of a section (the index keeps adjacent
   characters adjacent). */
(function () {
  "use strict";
  var input = document.getElementById("search-input");
  var list = document.getElementById("search-results");
  if (!input || !list) { return; }
  var root = document.body.getAttribute("data-root") || "";
  var noneText = document.body.getAttribute("data-text-search-none") || "{query}";
  var UNSPACED = /[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\u{20000}-\u{3134f}]/u;
  var language = document.documentElement.getAttribute("lang") || "";
  var indexUrl = document.body.getAttribute("data-search-index") || root + "assets/search-index.js";
  var partsUrl = indexUrl.replace(/[^/]*$/, "search/");
  var segmenter = null;
  var meta = null;
  var parts = {};  // name -> promise of the part's data
  var waiting = {};  // name -> resolve, until the part's script has run
  var latest = 0;  // the number of the last query typed: an older one's results are not shown
  var LIMIT = 20;

  window.BOOK_SEARCH_PART = function (name, data) {
    if (waiting[name]) { waiting[name](data); delete waiting[name]; }
  };

  function script(url, name) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      if (name) { waiting[name] = resolve; } else { tag.onload = function () { resolve(); }; }
      tag.onerror = function () { delete waiting[name]; reject(new Error(url)); };
      tag.src = url;
      document.body.appendChild(tag);
    });
  }

  function loadIndex() {
    if (!meta) {
      meta = script(indexUrl, null).then(function () {
        var index = window.BOOK_SEARCH_INDEX || {};
        language = language || index.language || "";
        return index;
      });
    }
    return meta;
  }

  function part(name) {
    if (!parts[name]) { parts[name] = script(partsUrl + name + ".js", name); }
    return parts[name];
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

  function gramHash(gram) {  /* FNV-1a over code points, as search.py's gram_hash */
    var value = 0x811c9dc5;
    Array.from(gram).forEach(function (char) { value = Math.imul(value ^ char.codePointAt(0), 0x01000193) >>> 0; });
    return value;
  }

  /* The grams the index has for a word: in each of its runs of ASCII punctuation or of other characters
     (search.py's RUNS; the characters Python takes for spaces belong to neither), the run itself up to three
     characters, else trigrams that cover it. */
  var RUNS = /[!-\/:-@\[-`{-~]+|[^\s\x1c-\x1f\x85!-\/:-@\[-`{-~]+/g;

  function gramsOf(word) {
    var found = [];
    (word.match(RUNS) || []).forEach(function (run) {
      var chars = Array.from(run);
      if (chars.length > 0 && chars.length <= 3) { found.push(run); }
      for (var i = 0; chars.length > 3 && i < chars.length; i += 3) {  // trigrams that cover the run: fewer parts to fetch
        var at = Math.min(i, chars.length - 3);
        found.push(chars.slice(at, at + 3).join(""));
      }
    });
    return found;
  }

  function bitset(encoded, count) {  /* ascending gaps, or a base64 bitset */
    var bits = new Uint8Array((count + 7) >> 3);
    if (typeof encoded === "string") {
      var raw = atob(encoded);
      for (var i = 0; i < raw.length && i < bits.length; i++) { bits[i] = raw.charCodeAt(i); }
      return bits;
    }
    var at = -1;
    (encoded || []).forEach(function (gap) { at += gap; bits[at >> 3] |= 1 << (at & 7); });
    return bits;
  }

  function has(bits, i) { return (bits[i >> 3] >> (i & 7)) & 1; }

  /* Per word: the sections whose title may hold it and those whose text may (every gram of the word there). */
  function possible(word, index, grams) {
    var title = null, text = null;
    if (gramsOf(word).length === 0) {  // only characters the index never cuts words at: any section may hold it
      var all = new Uint8Array((index.count + 7) >> 3).fill(255);
      return { title: all, text: all };
    }
    gramsOf(word).forEach(function (gram) {
      var sets = grams[gram] || [[], []];
      var t = bitset(sets[0], index.count), x = bitset(sets[1], index.count);
      if (title) {
        for (var i = 0; i < t.length; i++) { title[i] &= t[i]; }
        for (var j = 0; j < x.length; j++) { text[j] &= x[j]; }
      } else { title = t; text = x; }
    });
    return { title: title, text: text };
  }

  /* The section's score exactly as before the index was split: every word in its title (10) or text (1), and 5 more
     for a Chinese or Japanese query found whole; -1 when a word is missing. */
  function score(entry, terms, whole) {
    var title = lower(entry.t || ""), text = lower(entry.x || ""), total = 0;
    for (var i = 0; i < terms.length; i++) {
      var inTitle = title.indexOf(terms[i]) >= 0;
      if (!inTitle && text.indexOf(terms[i]) < 0) { return -1; }
      total += inTitle ? 10 : 1;
    }
    if (whole && (title.indexOf(whole) >= 0 || text.indexOf(whole) >= 0)) { total += 5; }
    return total;
  }

  function before(a, b) { return a.score > b.score || (a.score === b.score && a.id < b.id); }

  function search(query) {
    return loadIndex().then(function (index) {
      var terms = words(query);  // once the index is there: its language may be the one to cut words by
      if (terms.length === 0) { return []; }
      var whole = phrase(query);
      var count = index.count || 0;
      var names = {};
      terms.forEach(function (term) {
        gramsOf(term).forEach(function (gram) { names["g" + (gramHash(gram) % index.grams)] = true; });
      });
      return Promise.all(Object.keys(names).map(part)).then(function (loaded) {
        var grams = {};
        loaded.forEach(function (data) { Object.keys(data).forEach(function (gram) { grams[gram] = data[gram]; }); });
        var sets = terms.map(function (term) { return possible(term, index, grams); });
        var candidates = [];
        for (var id = 0; id < count; id++) {
          var best = 0;
          for (var t = 0; t < sets.length && best >= 0; t++) {
            if (has(sets[t].title, id)) { best += 10; } else if (has(sets[t].text, id)) { best += 1; } else { best = -1; }
          }
          if (best >= 0) { candidates.push({ score: best + (whole ? 5 : 0), id: id }); }
        }
        candidates.sort(function (a, b) { return before(a, b) ? -1 : before(b, a) ? 1 : 0; });
        return verify(candidates, terms, whole, index);
      });
    });
  }

  /* The candidates' sections, read in the order of their best possible score, each scored exactly, until none left
     could enter the top twenty. */
  function verify(candidates, terms, whole, index) {
    var hits = [];
    var next = 0;
    function docPart(id) {
      var lo = 0, hi = index.docs.length - 1;
      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (index.docs[mid] <= id) { lo = mid; } else { hi = mid - 1; } }
      return lo;
    }
    function step() {
      if (next >= candidates.length || (hits.length >= LIMIT && before(hits[LIMIT - 1], candidates[next]))) {
        return Promise.resolve(hits.slice(0, LIMIT));
      }
      var batch = candidates.slice(next, next + LIMIT);
      next += batch.length;
      var needed = {};
      batch.forEach(function (candidate) { needed[docPart(candidate.id)] = true; });
      var numbers = Object.keys(needed);
      return Promise.all(numbers.map(function (k) { return part("d" + k); })).then(function (loaded) {
        var docs = {};
        numbers.forEach(function (k, i) { docs[k] = loaded[i]; });
        batch.forEach(function (candidate) {
          var k = docPart(candidate.id);
          var entry = docs[k][candidate.id - index.docs[k]];
          var exact = score(entry, terms, whole);
          if (exact >= 0) { hits.push({ score: exact, id: candidate.id, entry: entry }); }
        });
        hits.sort(function (a, b) { return before(a, b) ? -1 : before(b, a) ? 1 : 0; });
        return step();
      });
    }
    return step();
  }

  /* The list is aria-busy while the parts a query needs load; an older query's results never replace a newer's. */
  function show(query) {
    var number = ++latest;
    if (!query.trim()) { list.innerHTML = ""; list.hidden = true; list.removeAttribute("aria-busy"); return; }
    list.setAttribute("aria-busy", "true");
    search(query).then(function (hits) {
      if (number === latest) { render(query, hits); list.removeAttribute("aria-busy"); }
    }, function () {
      if (number === latest) { list.removeAttribute("aria-busy"); }  // a part that failed to load: the last results stay
    });
  }

  function render(query, hits) {
    list.innerHTML = "";
    if (hits.length === 0) {
      var none = document.createElement("li");
      none.className = "search-none";
      none.textContent = noneText.split("{query}").join(query.trim());
      list.appendChild(none);
    }
    hits.forEach(function (hit) {
      var entry = hit.entry;
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
  input.addEventListener("input", function () { show(input.value); });
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
