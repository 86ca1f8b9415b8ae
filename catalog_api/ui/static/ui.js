// Streamcat UI: the only script. Shows each <time> in the browser's time zone (UTC stays on hover).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    timeZoneName: "short"
  });
  document.querySelectorAll("time[datetime]").forEach(function (node) {
    var when = new Date(node.getAttribute("datetime"));
    if (!isNaN(when.getTime())) {
      node.textContent = format.format(when);
    }
  });
});
