// Job sets of one queue, newest first: counts by state, a progress bar, and actions on the set.

import { api } from "../api.js";
import { actionBar } from "../actions.js";
import { errorText, fill, fmtCount, h, notice, stateBar, timeCell, ulidTime } from "../dom.js";

const FINISHED = ["SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"];

function jobsLink(queue, jobSet, state, text) {
  const params = new URLSearchParams({ queue, jobSet });
  if (state) params.set("state", state);
  return h("a", { href: `/jobs?${params}` }, text);
}

export function mount(main, app) {
  const picker = h("select", {
    "aria-label": "Queue",
    onchange: (event) => app.navigate(`/jobsets?queue=${encodeURIComponent(event.target.value)}`),
  });
  const results = h("div", { class: "results" });
  fill(main, h("h1", {}, "Job sets"), h("label", { class: "field inline" }, h("span", {}, "Queue"), picker), results);

  const row = (queue, group) => {
    const finished = FINISHED.reduce((n, state) => n + (group.states[state] || 0), 0);
    const unfinished = group.count - finished;
    return h("tr", { dataset: { jobSet: group.name } },
      h("td", {}, jobsLink(queue, group.name, "", group.name)),
      h("td", {}, timeCell(ulidTime(group.latestJobId))),
      h("td", { class: "num" }, fmtCount(group.count)),
      h("td", { class: "wide" }, stateBar(group.states, group.count),
        h("span", { class: "hint" }, `${Math.floor((finished / group.count) * 100)}% finished`)),
      ["QUEUED", "LEASED", "PENDING", "RUNNING", ...FINISHED].map((state) =>
        h("td", { class: "num" }, group.states[state] ? jobsLink(queue, group.name, state, fmtCount(group.states[state])) : "")),
      h("td", {}, unfinished ? actionBar({
        actions: {
          cancel: async (reason) => {
            const result = await api.cancelJobSet(queue, group.name, reason);
            return `Cancelling ${(result.cancelledIds || []).length} jobs of ${group.name}`;
          },
          reprioritize: async (priority) => {
            await api.reprioritizeJobSet(queue, group.name, priority);
            return `Priority of ${group.name}'s unfinished jobs set to ${priority}`;
          },
        },
        done: (message, kind) => {
          app.toast(message, kind);
          refresh();
        },
      }) : ""));
  };

  async function refresh() {
    const queue = new URLSearchParams(location.search).get("queue") || "";
    try {
      const { groups: queues } = await api.groups({ groupBy: "queue", take: 500 });
      const names = queues.map((g) => g.name).sort();
      fill(picker, h("option", { value: "", disabled: true, selected: !queue }, "choose a queue"),
        names.map((name) => h("option", { value: name, selected: name === queue }, name)));
      if (!queue) return fill(results, notice(names.length ? "Choose a queue to see its job sets." : "No jobs have been submitted yet."));
      const { groups } = await api.groups({ filter: { queue }, groupBy: "jobSet", take: 500 });
      if (!groups.length) return fill(results, notice(`Queue ${queue} has no jobs.`));
      fill(results, h("div", { class: "table-wrap" }, h("table", { class: "jobsets" },
        h("thead", {}, h("tr", {}, h("th", {}, "Job set"), h("th", {}, "Latest submission"), h("th", { class: "num" }, "Jobs"),
          h("th", { class: "wide" }, "Progress"),
          ["queued", "leased", "pending", "running", "succeeded", "failed", "cancelled", "preempted"].map((s) => h("th", { class: "num" }, s)),
          h("th", {}, "Actions"))),
        h("tbody", {}, groups.map((group) => row(queue, group))))));
    } catch (error) {
      fill(results, notice(`Could not load job sets: ${errorText(error)}`, "error"));
    }
  }
  refresh();
  return { refresh, update: refresh };
}
