/* Light and dark themes: follow the system until the reader chooses; remember the choice across pages. */
(function () {
  "use strict";
  var root = document.documentElement;
  /* A <picture>'s `<source media="(prefers-color-scheme: dark)">` (GitHub's dark and light images) follows the
     page's theme, the reader's choice included, not only the system's: its media becomes "all" in its theme and
     "not all" in the other; without script it follows the system, as on GitHub. */
  function picturesFollowTheme() {
    var dark = root.getAttribute("data-theme") === "dark";
    var sources = document.querySelectorAll("picture > source[media]");
    for (var i = 0; i < sources.length; i++) {
      var media = sources[i].getAttribute("data-media") || sources[i].getAttribute("media");
      var scheme = /prefers-color-scheme\s*:\s*(dark|light)/i.exec(media);
      if (scheme) {
        sources[i].setAttribute("data-media", media);
        sources[i].setAttribute("media", (scheme[1].toLowerCase() === "dark") === dark ? "all" : "not all");
      }
    }
  }
  picturesFollowTheme();
  var button = document.querySelector(".theme-toggle");
  if (button) {
    button.addEventListener("click", function () {
      var next = root.getAttribute("data-theme") === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      picturesFollowTheme();
      try { localStorage.setItem("book-theme", next); } catch (e) { /* storage may be off for file:// */ }
    });
  }
  var toggle = document.querySelector(".nav-toggle");
  var sidebar = document.getElementById("sidebar");
  if (toggle && sidebar) {
    toggle.addEventListener("click", function () {
      var open = document.body.classList.toggle("nav-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      if (open) { centerCurrent(); }
    });
  }
  /* A code block, table or display formula wider than the page scrolls sideways: make it focusable (only then), so
     that a keyboard user can scroll it with the arrow keys. A formula's box is a group named "Formula" (a group, not
     a landmark region: a page may hold many), and the MathML inside is read as it is. */
  var formula = document.body.getAttribute("data-text-formula") || "Formula";
  function focusableWhenScrolling() {
    var boxes = document.querySelectorAll(".content pre, .content table, .content .math.display");
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      var math = box.classList.contains("math");
      if (box.scrollWidth > box.clientWidth + 1) {
        box.setAttribute("tabindex", "0");
        if (math) { box.setAttribute("role", "group"); box.setAttribute("aria-label", formula); }
      } else if (box.getAttribute("tabindex") === "0") {
        box.removeAttribute("tabindex");
        if (math) { box.removeAttribute("role"); box.removeAttribute("aria-label"); }
      }
    }
  }
  focusableWhenScrolling();
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(focusableWhenScrolling, 150);
  });
  /* Show the current chapter in the middle of the chapter list. Only the list scrolls: scrollIntoView() would also
     move the page itself, away from its top or from the section a link pointed to. */
  var current = sidebar && sidebar.querySelector("[aria-current=page]");
  function centerCurrent() {
    if (!current || sidebar.clientHeight === 0) { return; }
    var offset = current.getBoundingClientRect().top - sidebar.getBoundingClientRect().top;
    sidebar.scrollTop += offset - (sidebar.clientHeight - current.offsetHeight) / 2;
  }
  centerCurrent();
})();
