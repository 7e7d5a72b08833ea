// This browser's key for this site (see leaderboard/sessions.py): kept in localStorage, which only
// pages of this exact origin can read or write, and sent with every form, so the server can tell a
// sign-in made here from one another site planted in the cookies. Without it forms go keyless.
(function () {
  "use strict";
  var NAME = "tpugraphs_browser_key";
  var key;
  try {
    key = window.localStorage.getItem(NAME);
    if (!key || !/^[0-9a-f]{32}$/.test(key)) {
      var bytes = new Uint8Array(16);
      window.crypto.getRandomValues(bytes);
      key = Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
      window.localStorage.setItem(NAME, key);
    }
  } catch (e) { return; }
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    var field = document.createElement("input");
    field.type = "hidden";
    field.name = "browser_key";
    field.value = key;
    form.insertBefore(field, form.firstChild);  // first: the server reads it before an upload's file
  });
})();
