// The jobs table's columns: which are shown and in what order, annotation columns
// included. The choice is the user's own, kept in this browser (localStorage), not in
// shared links: a link says which jobs, not how someone likes to see them.

import { expectedIn, fmtBytes, fmtCpu, h, runtime, stateBadge, timeCell } from "../dom.js";
import { resetWidths } from "./jobs_resize.js";

const STORAGE_KEY = "lookout.jobs.columns";
const ANNOTATION = "annotation:";

/** Built-in columns by id: [title, cell(job, app), class]. */
const BUILT_IN = {
  jobId: ["Job id", (job, app) => h("a", { href: app.jobLink(job.jobId), class: "mono job-link", onclick: app.openJobClick(job.jobId) }, job.jobId)],
  queue: ["Queue", (job) => job.queue],
  jobSet: ["Job set", (job) => job.jobSet],
  state: ["State", (job) => [stateBadge(job.state), job.cancelRequested && job.state !== "CANCELLED" ? h("span", { class: "hint" }, " cancelling") : ""]],
  priority: ["Priority", (job) => job.priority, "num"],
  priorityClass: ["Class", (job) => job.priorityClass],
  cpu: ["CPU", (job) => fmtCpu(job.cpuMillis), "num"],
  memory: ["Memory", (job) => fmtBytes(job.memoryBytes), "num"],
  gpu: ["GPU", (job) => job.gpu || "", "num"],
  owner: ["Owner", (job) => job.owner],
  namespace: ["Namespace", (job) => job.namespace],
  cluster: ["Cluster", (job) => job.cluster],
  node: ["Node", (job) => job.node],
  exitCode: ["Exit", (job) => job.exitCode ?? "", "num"],
  submitted: ["Submitted", (job) => timeCell(job.submitted)],
  lastTransition: ["Last transition", (job) => timeCell(job.lastTransition)],
  runtime: ["Runtime", (job) => runtime(job), "num"],
  expectedStart: ["Expected start", (job) => (job.state === "QUEUED" ? expectedIn(job.expectedStart) : ""), "num"],
};
const DEFAULT = Object.keys(BUILT_IN).filter((id) => id !== "namespace");

/** The column with `id`: [title, cell, class], or undefined for an id no longer known. */
export function column(id) {
  if (id.startsWith(ANNOTATION)) {
    const key = id.slice(ANNOTATION.length);
    return [key, (job) => job.annotations[key] ?? ""];
  }
  return BUILT_IN[id];
}

/** The ids of the columns shown, in order (the user's choice, else the default). */
export function shownColumns() {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) || "null");
    if (Array.isArray(stored)) {
      const known = stored.filter((id) => typeof id === "string" && column(id));
      if (known.includes("jobId")) return known;
    }
  } catch {
    // an unreadable choice is no choice
  }
  return [...DEFAULT];
}

function save(ids) {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(ids));
}

/** The "Columns" menu: show or hide, move up or down, add annotation columns, reset.
 *  `onChange(ids)` gets the new (saved) choice. */
export function columnsMenu(onChange) {
  const list = h("ol", { class: "columns-list" });
  const apply = (ids) => {
    save(ids);
    render();
    onChange(ids);
  };
  const move = (id, by) => {
    const ids = shownColumns();
    const at = ids.indexOf(id);
    const to = at + by;
    if (at < 0 || to < 0 || to >= ids.length) return;
    [ids[at], ids[to]] = [ids[to], ids[at]];
    apply(ids);
  };
  const render = () => {
    const shown = shownColumns();
    const hidden = Object.keys(BUILT_IN).filter((id) => !shown.includes(id));
    list.replaceChildren(...[...shown, ...hidden].map((id) => {
      const [title] = column(id);
      const visible = shown.includes(id);
      const label = id.startsWith(ANNOTATION) ? `Annotation ${title}` : title;
      return h("li", { dataset: { column: id } },
        h("label", {}, h("input", {
          type: "checkbox", checked: visible, disabled: id === "jobId",
          onchange: () => apply(visible ? shown.filter((other) => other !== id) : [...shown, id]),
        }), label),
        visible ? h("button", { class: "link", "aria-label": `Move ${label} up`, onclick: () => move(id, -1) }, "↑") : "",
        visible ? h("button", { class: "link", "aria-label": `Move ${label} down`, onclick: () => move(id, 1) }, "↓") : "");
    }));
  };
  const key = h("input", { type: "text", name: "annotation-column", placeholder: "annotation key", "aria-label": "Annotation key" });
  const add = h("form", {
    class: "columns-add",
    onsubmit: (event) => {
      event.preventDefault();
      const id = `${ANNOTATION}${key.value.trim()}`;
      if (id === ANNOTATION || shownColumns().includes(id)) return;
      key.value = "";
      apply([...shownColumns(), id]);
    },
  }, key, h("button", { class: "button", type: "submit" }, "Add column"));
  const reset = h("button", {
    class: "link",
    onclick: () => {
      resetWidths();
      apply([...DEFAULT]);
    },
  }, "Reset columns");
  render();
  return h("details", { class: "columns-menu" }, h("summary", {}, "Columns"),
    h("div", { class: "columns-panel" }, list, add, reset));
}
