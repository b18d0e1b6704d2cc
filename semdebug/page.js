(function () {
  var body = document.body, ms = +body.dataset.refreshMs, btn = document.getElementById("pause");
  var paused = sessionStorage.getItem("semdebug-paused") === "1", timer = null;
  function show() {
    btn.textContent = paused ? "resume auto-refresh" : "pause auto-refresh";
    body.dataset.paused = paused ? "true" : "false";
  }
  function schedule() {
    clearTimeout(timer);
    if (!paused && ms > 0) timer = setTimeout(refresh, ms);
  }
  function refresh() {
    fetch(location.href, {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (text) {
      var next = new DOMParser().parseFromString(text, "text/html").getElementById("content");
      if (next && !paused) {
        document.getElementById("content").replaceWith(next);
        body.dataset.refreshes = +body.dataset.refreshes + 1;
      }
    }).catch(function () {}).then(schedule);
  }
  if (!btn) return;
  btn.hidden = !(ms > 0);
  btn.addEventListener("click", function () {
    paused = !paused;
    sessionStorage.setItem("semdebug-paused", paused ? "1" : "0");
    show();
    schedule();
  });
  show();
  schedule();
})();
