// Saved views: the jobs page's state kept on the server under a name, per user
// (/v1/lookout/views). A view holds the page's query string (filters, sort, order, grouping)
// and this browser's `lookout.jobs.*` choices (columns and their widths); the server keeps
// it as an opaque object. Opening a view writes those choices back and loads its query;
// its link shares the query only (a link says which jobs, the columns stay the reader's).

import { api } from "../api.js";
import { errorText, h } from "../dom.js";

const STORED_PREFIX = "lookout.jobs.";
// What the server accepts as a name (armada/model/saved_views.py), checked here to answer early.
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9 ._-]{0,62}[A-Za-z0-9_-])?$/;

/** The page's state as a saved view keeps it. */
export function currentState() {
  const params = new URLSearchParams(location.search);
  params.delete("job");
  params.delete("page");
  const stored = {};
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key.startsWith(STORED_PREFIX)) stored[key] = localStorage.getItem(key);
  }
  return { query: params.toString(), stored };
}

/** The jobs page URL of a view's query (a path on this origin, whatever the state holds). */
export function viewPath(state) {
  const query = typeof state.query === "string" ? new URLSearchParams(state.query).toString() : "";
  return query ? `/jobs?${query}` : "/jobs";
}

/** Put a view's browser choices back (dropping those it did not have) and load its query. */
function openView(state) {
  const stored = state.stored && typeof state.stored === "object" ? state.stored : {};
  for (const key of Object.keys(localStorage).filter((k) => k.startsWith(STORED_PREFIX))) {
    if (!(key in stored)) localStorage.removeItem(key);
  }
  for (const [key, value] of Object.entries(stored)) {
    if (key.startsWith(STORED_PREFIX) && typeof value === "string") localStorage.setItem(key, value);
  }
  location.assign(viewPath(state)); // a fresh page: every part re-reads its choices
}

async function copy(text, app, what) {
  try {
    await navigator.clipboard.writeText(text);
    app.toast(`${what} copied.`);
  } catch (error) {
    app.toast(`Could not copy: ${errorText(error)}`, "error");
  }
}

/** The "Views" menu: the caller's saved views (open, copy link, delete) and "save as". */
export function viewsMenu(app) {
  const list = h("ul", { class: "views-list" });
  const status = h("p", { class: "hint", role: "status" });
  const render = async () => {
    try {
      const { views } = await api.views();
      if (!views.length) status.textContent = "No saved views yet.";
      else status.textContent = "";
      list.replaceChildren(...views.map((view) => h("li", { dataset: { view: view.name } },
        h("a", { href: viewPath(view.state), class: "view-open", onclick: (event) => {
          event.preventDefault();
          openView(view.state);
        } }, view.name),
        h("button", { class: "link", "aria-label": `Copy link to ${view.name}`,
          onclick: () => copy(new URL(viewPath(view.state), location.href).href, app, "Link") }, "link"),
        h("button", { class: "link", "aria-label": `Delete ${view.name}`, onclick: async () => {
          try {
            await api.deleteView(view.name);
            render();
          } catch (error) {
            app.toast(`Could not delete the view: ${errorText(error)}`, "error");
          }
        } }, "delete"))));
    } catch (error) {
      status.textContent = `Could not load saved views: ${errorText(error)}`;
    }
  };
  const name = h("input", { type: "text", name: "view-name", placeholder: "view name", maxlength: 64, "aria-label": "View name" });
  const save = h("form", {
    class: "columns-add",
    onsubmit: async (event) => {
      event.preventDefault();
      const wanted = name.value.trim();
      if (!NAME.test(wanted)) {
        app.toast("A view name is letters, digits, spaces, '.', '_' and '-' (up to 64).", "error");
        return;
      }
      try {
        await api.saveView(wanted, currentState());
        name.value = "";
        app.toast(`Saved view ${wanted}.`);
        render();
      } catch (error) {
        app.toast(`Could not save the view: ${errorText(error)}`, "error");
      }
    },
  }, name, h("button", { class: "button", type: "submit" }, "Save view"));
  const menu = h("details", { class: "views-menu", ontoggle: () => {
    if (!menu.open) return;
    for (const other of document.querySelectorAll("details.columns-menu[open]")) if (other !== menu) other.open = false;
    render();
  } },
    h("summary", {}, "Views"), h("div", { class: "columns-panel" }, list, status, save));
  return menu;
}
