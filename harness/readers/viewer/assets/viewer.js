"use strict";
// aa-grade view: keys, search, and the refresh of a run still going. No framework, nothing
// loaded: this file is inline in every page, allowed by its hash.
(function () {
  const find = document.getElementById("find");
  const hits = document.getElementById("hits");
  const episode = document.body.classList.contains("episode-page");
  let matches = [], current = -1, turn = -1;

  function turns() { return Array.from(document.querySelectorAll("section.turn")); }

  function goTurn(step) {
    const all = turns();
    if (!all.length) return;
    if (turn < 0) { // start from the first turn below the top of the window
      const y = window.scrollY + 130;
      const first = all.findIndex(t => t.offsetTop >= y - 1);
      const at = first < 0 ? all.length : first;
      turn = step > 0 ? at - 1 : at;
    }
    turn = Math.max(0, Math.min(all.length - 1, turn + step));
    all.forEach(t => t.classList.remove("current"));
    all[turn].classList.add("current");
    all[turn].scrollIntoView({block: "start"});
    history.replaceState(null, "", "#" + all[turn].id);
  }

  function follow(id) {
    const a = document.getElementById(id);
    if (a) location.href = a.href;
  }

  // Episode search: every match in commands, outputs and text, highlighted where the
  // browser has the CSS Custom Highlight API; Enter and Shift+Enter walk through them.
  function search() {
    const q = find.value.toLowerCase();
    matches = [];
    current = -1;
    if (q.length > 0) {
      for (const el of document.querySelectorAll("[data-search]")) {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const text = n.data.toLowerCase();
          for (let i = text.indexOf(q); i >= 0; i = text.indexOf(q, i + q.length)) {
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + q.length);
            matches.push(r);
          }
        }
      }
    }
    paint();
    hits.textContent = q ? matches.length + " match" + (matches.length === 1 ? "" : "es") : "";
  }

  function paint() {
    if (!window.CSS || !CSS.highlights) return;
    CSS.highlights.set("find", new Highlight(...matches));
    CSS.highlights.set("find-current", current >= 0 ? new Highlight(matches[current]) : new Highlight());
  }

  function step(dir) {
    if (!matches.length) return;
    current = (current + dir + matches.length) % matches.length;
    const r = matches[current];
    for (let el = r.startContainer.parentElement; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    r.startContainer.parentElement.scrollIntoView({block: "center"});
    paint();
    hits.textContent = (current + 1) + " of " + matches.length;
  }

  // Runs page: the search keeps the tasks whose id holds the text.
  function filterTasks() {
    const q = find.value.toLowerCase();
    for (const row of document.querySelectorAll("tr[data-task]")) {
      row.classList.toggle("hidden", q !== "" && !row.dataset.task.toLowerCase().includes(q));
    }
  }

  if (find) {
    find.addEventListener("input", episode ? search : filterTasks);
    find.addEventListener("keydown", e => {
      if (e.key === "Enter" && episode) { e.preventDefault(); step(e.shiftKey ? -1 : 1); }
      if (e.key === "Escape") { find.blur(); }
    });
  }

  document.addEventListener("keydown", e => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement) return;
    switch (e.key) {
      case "/": e.preventDefault(); if (find) find.focus(); break;
      case "j": if (episode) goTurn(1); break;
      case "k": if (episode) goTurn(-1); break;
      case "n": follow("next"); break;
      case "p": follow("prev"); break;
      case "u": follow("up"); break;
    }
  });

  // A run still going: poll the page, and put the new one in place when it changed.
  let version = document.body.dataset.live;
  if (version && location.protocol !== "file:") {
    const timer = setInterval(async () => {
      let res;
      try {
        res = await fetch(location.href, {headers: {"If-None-Match": version}, cache: "no-store"});
      } catch (err) { return; }
      if (res.status !== 200) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const open = new Set(Array.from(document.querySelectorAll("main details[open]"), d => d.closest("[id]") && d.closest("[id]").id));
      document.querySelector("main").replaceWith(document.adoptNode(doc.querySelector("main")));
      for (const id of open) {
        const s = id && document.getElementById(id);
        if (s) s.querySelectorAll("details").forEach(d => { d.open = true; });
      }
      version = doc.body.dataset.live;
      if (find && find.value) (episode ? search : filterTasks)();
      if (!version) clearInterval(timer);
    }, 2000);
  }
})();
