// Executors and their nodes, with the operators' controls: cordon or uncordon an executor
// or a node, and preempt or cancel every job running on one (each behind a confirmation).

import { actionBar } from "../actions.js";
import { api } from "../api.js";
import { errorText, fill, fmtAgo, fmtTime, h, notice } from "../dom.js";

function cordonBadge(cordoned, reason) {
  return cordoned ? h("span", { class: "badge cordoned", title: reason || "no reason given" }, "cordoned") : "";
}

function jobsMessage(verb, result) {
  const ids = result.preemptedIds || result.cancelledIds || [];
  return `${verb} ${ids.length} job${ids.length === 1 ? "" : "s"}`;
}

/** Cordon (or uncordon) plus preempt and cancel, on an executor or (`node`) one of its nodes. */
function controls(app, executor, node, cordoned, refresh) {
  const what = node ? `node ${node.name}` : `executor ${executor.name}`;
  const cordon = async (on, reason) => {
    if (node) await api.cordonNode(node.name, executor.name, on, on ? reason : "");
    else await api.cordonExecutor(executor.name, on, on ? reason : "");
    refresh();
    return `${on ? "Cordoned" : "Uncordoned"} ${what}`;
  };
  const onJobs = (verb, title) => async () => {
    const result = await api.onExecutor(verb, executor.name, node ? node.name : "");
    refresh();
    return `${jobsMessage(title, result)} on ${what}`;
  };
  const actions = cordoned
    ? { uncordon: (reason) => cordon(false, reason) }
    : { cordon: (reason) => cordon(true, reason) };
  actions.preempt = onJobs("preempt", "Preempting");
  actions.cancel = onJobs("cancel", "Cancelling");
  return actionBar({ label: "", actions, done: (message, kind) => app.toast(message, kind) });
}

function nodeRows(app, executor, refresh) {
  return executor.nodes.map((node) => h("tr", { class: "node", dataset: { node: node.name, executor: executor.name } },
    h("td", {}, `↳ ${node.name}`, cordonBadge(node.cordoned, node.cordonReason),
      node.unschedulable && !node.cordoned ? h("span", { class: "badge" }, "unschedulable") : "",
      node.ready === false ? h("span", { class: "badge state-failed" }, "not ready") : ""),
    h("td", {}, node.cordoned ? node.cordonReason || "—" : ""),
    h("td", { class: "num" }, node.runningJobs || 0),
    h("td", {}, ""),
    h("td", {}, controls(app, executor, node, node.cordoned, refresh))));
}

function executorsTable(app, executors, refresh) {
  if (!executors.length) {
    return notice("No executors have reported: start one with `armada executor`, or run `armada serve --dev`.");
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "executors fleet" },
    h("thead", {}, h("tr", {}, h("th", {}, "Executor / node"), h("th", {}, "Cordon reason"),
      h("th", { class: "num" }, "Running jobs"), h("th", {}, "Last seen"), h("th", {}, "Actions"))),
    h("tbody", {}, executors.map((executor) => [
      h("tr", { class: "executor", dataset: { executor: executor.name } },
        h("td", {}, h("strong", {}, executor.name), executor.pool ? ` (${executor.pool})` : "",
          cordonBadge(executor.cordoned, executor.cordonReason)),
        h("td", {}, executor.cordoned ? `${executor.cordonReason || "—"}${executor.cordonedBy ? ` (by ${executor.cordonedBy})` : ""}` : ""),
        h("td", { class: "num" }, executor.runningJobs || 0),
        h("td", {}, executor.lastSeen
          ? h("time", { datetime: executor.lastSeen, title: fmtTime(executor.lastSeen) }, fmtAgo(executor.lastSeen))
          : "never"),
        h("td", {}, controls(app, executor, null, executor.cordoned, refresh))),
      nodeRows(app, executor, refresh),
    ]))));
}

export function mount(main, app) {
  const section = h("section", {}, notice("Loading…", "loading"));
  fill(main, h("h1", {}, "Executors"),
    h("p", { class: "hint" }, "A cordoned executor or node gets no new jobs; its running jobs go on."), section);
  async function refresh() {
    try {
      const data = await api.executors();
      fill(section, executorsTable(app, data.executors || [], refresh));
    } catch (error) {
      fill(section, notice(`Could not load the executors: ${errorText(error)}`, "error"));
    }
  }
  refresh();
  return { refresh, update: refresh };
}
