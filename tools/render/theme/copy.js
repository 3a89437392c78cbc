/* A "Copy" button on every code block, added here so that a reader without script sees no dead button. It copies
   the code's text only: not its own label, and for shell blocks not the `$ ` prompts (as mdBook and Material do).
   Its words are the page's (body[data-text-*], in the site's language). */
(function () {
  "use strict";
  var SHELLS = { bash: 1, sh: 1, shell: 1, console: 1, "shell-session": 1, zsh: 1, fish: 1, ksh: 1 };
  var blocks = document.querySelectorAll(".content pre.highlight");
  function said(name, english) { return document.body.getAttribute("data-text-" + name) || english; }  // the page's language
  var COPY = said("copy", "Copy");
  if (blocks.length === 0) { return; }
  var status = document.createElement("div");  // one live region for the page: screen readers hear "Copied"
  status.className = "visually-hidden copy-status";
  status.setAttribute("aria-live", "polite");
  status.setAttribute("role", "status");
  document.body.appendChild(status);

  function codeText(pre) {
    var code = pre.querySelector("code") || pre;
    var text = code.textContent.replace(/\n$/, "");
    if (SHELLS[(pre.getAttribute("data-lang") || "").toLowerCase()]) {
      text = text.split("\n").map(function (line) { return line.replace(/^\$ /, ""); }).join("\n");
    }
    return text;
  }

  /* file:// pages and older browsers have no asynchronous clipboard: select a hidden text area and copy. */
  function copyByCommand(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.top = "-1000px";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var done = false;
    try { done = document.execCommand("copy"); } catch (e) { done = false; }
    document.body.removeChild(area);
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return copyByCommand(text); });
    }
    return copyByCommand(text);
  }

  function say(button, message) {
    status.textContent = "";
    status.textContent = message;
    button.textContent = message;
    clearTimeout(button.copyTimer);
    button.copyTimer = setTimeout(function () { button.textContent = COPY; status.textContent = ""; }, 2000);
  }

  Array.prototype.forEach.call(blocks, function (pre) {
    var box = document.createElement("div");
    box.className = "code-block";
    pre.parentNode.insertBefore(box, pre);
    box.appendChild(pre);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code";
    button.textContent = COPY;
    button.setAttribute("aria-label", said("copy-label", "Copy code"));
    button.addEventListener("click", function () {
      copy(codeText(pre)).then(function () { say(button, said("copied", "Copied")); }, function () { say(button, said("copy-failed", "Press Ctrl+C to copy")); });
    });
    box.insertBefore(button, pre);
  });
})();
