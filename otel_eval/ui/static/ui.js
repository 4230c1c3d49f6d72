// Live updates without a framework: poll the small stamp endpoint; when the data changed,
// fetch this same page again and swap its <main>. The server renders (and escapes) everything;
// this script never builds markup from data.
(function () {
  "use strict";
  var body = document.body;
  var stamp = body.dataset.stamp;
  var stampUrl = body.dataset.stampUrl;
  var every = (parseFloat(body.dataset.poll) || 2) * 1000;
  var badge = document.getElementById("live");

  function bindFilters(root) {
    // Changing a menu applies the filters at once; the button stays for keyboards and no-JS.
    root.querySelectorAll("form.filters select").forEach(function (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    });
  }

  function show(state, text) {
    if (!badge) return;
    badge.className = "live " + state;
    badge.textContent = text;
  }

  function refresh() {
    return fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html");
        var next = fresh.querySelector("main");
        var current = document.querySelector("main");
        if (!next || !current) return;
        var open = {};
        current.querySelectorAll("details[open][id]").forEach(function (d) { open[d.id] = true; });
        var adopted = document.adoptNode(next);
        current.replaceWith(adopted);
        adopted.querySelectorAll("details[id]").forEach(function (d) { if (open[d.id]) d.open = true; });
        bindFilters(adopted);
        body.dataset.refreshed = String((parseInt(body.dataset.refreshed || "0", 10) || 0) + 1);
      });
  }

  function editing() {
    // A reviewer typing a label's note keeps the page: new data waits for the next tick after.
    var form = document.querySelector("main form.label-form");
    if (!form) return false;
    if (form.contains(document.activeElement)) return true;
    return Array.prototype.some.call(form.querySelectorAll("textarea, input[name=by]"),
                                     function (field) { return field.value !== ""; });
  }

  function tick() {
    if (editing()) { window.setTimeout(tick, every); return; }
    fetch(stampUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        if (data.stamp === stamp) return null;
        return refresh().then(function () { stamp = data.stamp; body.dataset.stamp = stamp; });
      })
      .then(function () { show("ok", "live"); }, function () { show("err", "offline"); })
      .then(function () { window.setTimeout(tick, every); });
  }

  bindFilters(document);
  if (stamp && stampUrl) window.setTimeout(tick, every);
})();
