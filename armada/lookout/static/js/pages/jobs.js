// The jobs page: a server-side filtered, sorted, paginated table (or nested groups, see jobs_grouping.js),
// with bulk actions on the selected jobs. Its whole state is in the URL (see jobs_url.js).

import { api } from "../api.js";
import { actionBar, jobActions } from "../actions.js";
import { errorText, fill, fmtCount, h, notice } from "../dom.js";
import { column, columnsMenu, shownColumns } from "./jobs_columns.js";
import { filterBar } from "./jobs_filters.js";
import { drawGroups, groupingBar } from "./jobs_grouping.js";
import { resizableColumns } from "./jobs_resize.js";
import { apiFilter, readView, writeView } from "./jobs_url.js";
import { viewsMenu } from "./jobs_views.js";

export function mount(main, app) {
  let view = readView(new URLSearchParams(location.search));
  let queues = [];
  const selected = new Set();
  const filtersSlot = h("div");
  const groupingSlot = h("div");
  const expanded = new Set(); // open groups' paths, and how many jobs each shows
  const shown = new Map();
  const actionsSlot = h("div", { class: "toolbar" });
  const results = h("div", { class: "results", "aria-live": "polite" });
  let shownPage = null; // the page on screen, redrawn when the columns change
  const columnsSlot = h("div", { class: "columns-slot" }, columnsMenu(() => {
    if (view.groupBy.length) refresh();
    else if (shownPage) renderTable(shownPage);
  }));
  fill(main, h("h1", {}, "Jobs"), filtersSlot, groupingSlot,
    h("div", { class: "toolbar-row" }, actionsSlot, viewsMenu(app), columnsSlot), results);

  // Edits from the filter bar leave it alone (it already shows them, and may have focus).
  const change = (patch, { fromFilters = true } = {}) => {
    if (patch.size !== undefined) patch.size = Number(patch.size);
    view = { ...view, page: 1, ...patch };
    selected.clear();
    renderActions();
    history.replaceState(null, "", `/jobs?${writeView(view, new URLSearchParams(location.search))}`.replace(/\?$/, ""));
    if (!fromFilters) renderFilters();
    if (patch.groupBy) renderGrouping();
    refresh();
  };
  const renderFilters = () => fill(filtersSlot, filterBar(view, queues, change));
  const renderGrouping = () => fill(groupingSlot, groupingBar(view, (patch) => change(patch, { fromFilters: false })));

  const renderActions = () => {
    if (!selected.size) {
      fill(actionsSlot, h("span", { class: "hint" }, "Select jobs to cancel, reprioritize or preempt them."));
      return;
    }
    fill(actionsSlot, actionBar({
      label: `${selected.size} selected job${selected.size === 1 ? "" : "s"}`,
      actions: jobActions(api, () => [...selected]),
      done: (message, kind) => {
        app.toast(message, kind);
        if (kind === "ok") selected.clear();
        renderActions();
        refresh();
      },
    }));
  };

  const renderTable = (page) => {
    shownPage = page;
    const { jobs, hasMore } = page;
    const ids = shownColumns();
    const columns = ids.map(column);
    if (!jobs.length) {
      const filtered = location.search.replace(/[?&]job=[^&]*/, "") !== "";
      return fill(results, notice(filtered ? "No jobs match these filters." : "No jobs yet: submit some with `armada submit`."));
    }
    const all = h("input", {
      type: "checkbox", "aria-label": "Select all on this page",
      checked: jobs.every((job) => selected.has(job.jobId)),
      onchange: (event) => {
        for (const job of jobs) event.target.checked ? selected.add(job.jobId) : selected.delete(job.jobId);
        renderTable(page);
        renderActions();
      },
    });
    const first = (view.page - 1) * view.size + 1;
    const table = h("table", { class: "jobs" },
      h("thead", {}, h("tr", {}, h("th", {}, all), columns.map(([title, , cls]) => h("th", { class: cls }, title)))),
      h("tbody", {}, jobs.map((job) => h("tr", { dataset: { jobId: job.jobId, state: job.state } },
        h("td", {}, h("input", {
          type: "checkbox", "aria-label": `Select ${job.jobId}`, checked: selected.has(job.jobId),
          onchange: (event) => {
            event.target.checked ? selected.add(job.jobId) : selected.delete(job.jobId);
            renderActions();
          },
        })),
        columns.map(([, cell, cls]) => h("td", { class: cls }, cell(job, app)))))));
    fill(results,
      h("div", { class: "table-wrap" }, table),
      h("nav", { class: "pager" },
        h("span", {}, `${fmtCount(first)}–${fmtCount(first + jobs.length - 1)} of `, total),
        h("button", { class: "button", disabled: view.page === 1, onclick: () => change({ page: view.page - 1 }, { fromFilters: false }) }, "Previous"),
        h("button", {
          class: "button", disabled: !hasMore,
          onclick: () => change({ page: view.page + 1 }, { fromFilters: false }),
        }, "Next")));
    resizableColumns(table, ids, { onReset: () => renderTable(page) });
  };

  // The count is a separate, costlier query, needed only when more pages follow, and then
  // asked again only when the filter changes (a big total may lag live changes a little).
  const total = h("span", { class: "total" }, "…");
  let counted = null;
  const recount = (filter) => {
    const key = JSON.stringify(filter);
    if (key === counted) return;
    counted = key;
    fill(total, "…");
    api.count(filter).then(({ count, capped }) => {
      if (key === counted) fill(total, `${fmtCount(count)}${capped ? "+" : ""}`);
    }).catch(() => fill(total, "?"));
  };

  let generation = 0;
  async function refresh() {
    const mine = ++generation;
    try {
      if (view.groupBy.length) {
        await drawGroups(results, view, apiFilter(view), app, expanded, shown, () => mine === generation, refresh);
      } else {
        const order = { field: view.sort, direction: view.dir };
        const filter = apiFilter(view);
        const page = await api.jobs({ filter, order, skip: (view.page - 1) * view.size, take: view.size });
        if (mine === generation) {
          if (page.hasMore) recount(filter);
          else {
            counted = null;
            fill(total, fmtCount((view.page - 1) * view.size + page.jobs.length));
          }
          renderTable(page);
        }
      }
    } catch (error) {
      if (mine === generation) fill(results, notice(`Could not load jobs: ${errorText(error)}`, "error"));
    }
  }

  renderFilters();
  renderGrouping();
  renderActions();
  api.groups({ groupBy: "queue", take: 500 }).then(({ groups }) => {
    queues = groups.map((group) => group.name).sort();
    fill(filtersSlot.querySelector("#queue-names"), queues.map((name) => h("option", { value: name })));
  }).catch(() => {}); // suggestions only: the filter still works without them
  refresh();
  return {
    refresh,
    update() {
      view = readView(new URLSearchParams(location.search));
      selected.clear();
      renderFilters();
      renderGrouping();
      renderActions();
      refresh();
    },
  };
}
