// Lookout's entry point: routes paths to pages, keeps them live, hosts the job drawer.
//
// Pages are modules exporting `mount(main, app)` that return `{ refresh, update }`:
// `refresh()` re-reads the server (live updates), `update()` re-reads the URL (same page,
// new query string, e.g. after Back).

import { followChanges } from "./api.js";
import { createDrawer } from "./drawer.js";
import { h } from "./dom.js";
import * as executors from "./pages/executors.js";
import * as jobs from "./pages/jobs.js";
import * as jobsets from "./pages/jobsets.js";
import * as overview from "./pages/overview.js";
import * as usage from "./pages/usage.js";
import { startSession } from "./session.js";

const PAGES = { "/": overview, "/jobs": jobs, "/jobsets": jobsets, "/executors": executors, "/usage": usage };

const main = document.getElementById("main");
const toasts = document.getElementById("toasts");
const live = document.getElementById("live");
let page = null;
let path = null;

function withJob(jobId) {
  const url = new URL(location.href);
  if (jobId) url.searchParams.set("job", jobId);
  else url.searchParams.delete("job");
  return `${url.pathname}${url.search}`;
}

const app = {
  navigate(url) {
    history.pushState(null, "", url);
    render();
  },
  jobLink: (jobId) => withJob(jobId),
  openJobClick: (jobId) => (event) => {
    if (event.metaKey || event.ctrlKey || event.shiftKey) return; // let the browser open a tab
    event.preventDefault();
    history.pushState(null, "", withJob(jobId));
    drawer.open(jobId);
  },
  closeJob() {
    history.pushState(null, "", withJob(null));
    drawer.close();
  },
  toast(text, kind = "ok") {
    const toast = h("div", { class: `toast toast-${kind}`, role: kind === "error" ? "alert" : "status" }, text,
      h("button", { class: "link", "aria-label": "Dismiss", onclick: () => toast.remove() }, "×"));
    toasts.append(toast);
    if (kind === "ok") setTimeout(() => toast.remove(), 6000);
  },
};

const drawer = createDrawer(document.getElementById("drawer"), app);

function render() {
  const next = PAGES[location.pathname] ? location.pathname : "/";
  if (next !== path) {
    path = next;
    page = PAGES[next].mount(main, app);
  } else {
    page.update();
  }
  for (const link of document.querySelectorAll("nav.main a")) {
    link.classList.toggle("active", link.getAttribute("href") === path);
  }
  const jobId = new URLSearchParams(location.search).get("job");
  if (jobId) drawer.open(jobId);
  else drawer.close();
}

// Same-origin page links navigate in place; everything else (API, new tabs) is left alone.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !(url.pathname in PAGES)) return;
  event.preventDefault();
  app.navigate(`${url.pathname}${url.search}`);
});
window.addEventListener("popstate", render);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && new URLSearchParams(location.search).has("job") && !event.target.closest("form.confirm")) {
    app.closeJob();
  }
});

// Live updates: refresh what is shown whenever the log moves, one refresh at a time, and
// never while the user is confirming an action (the next change refreshes instead).
let refreshing = null;
let again = false;
async function refreshAll() {
  if (refreshing) {
    again = true;
    return;
  }
  if (document.querySelector("form.confirm")) return;
  refreshing = Promise.all([page.refresh(), drawer.refresh()]);
  await refreshing;
  refreshing = null;
  if (again) {
    again = false;
    refreshAll();
  }
}
await startSession(document.getElementById("user"), main);
followChanges(refreshAll, (connected) => {
  live.textContent = connected ? "live" : "reconnecting…";
  live.className = connected ? "live on" : "live off";
});

render();
