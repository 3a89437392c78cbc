/* Light and dark themes: follow the system until the reader chooses; remember the choice across pages. */
(function () {
  "use strict";
  var root = document.documentElement;
  var button = document.querySelector(".theme-toggle");
  if (button) {
    button.addEventListener("click", function () {
      var next = root.getAttribute("data-theme") === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      try { localStorage.setItem("book-theme", next); } catch (e) { /* storage may be off for file:// */ }
    });
  }
  var toggle = document.querySelector(".nav-toggle");
  var sidebar = document.getElementById("sidebar");
  if (toggle && sidebar) {
    toggle.addEventListener("click", function () {
      var open = document.body.classList.toggle("nav-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }
  var current = sidebar && sidebar.querySelector("[aria-current=page]");
  if (current && current.scrollIntoView) { current.scrollIntoView({ block: "center" }); }
})();
