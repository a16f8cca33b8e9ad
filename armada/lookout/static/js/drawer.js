// The job detail drawer: summary, why it is pending, failure and log tail, runs, retries, the event
// timeline and the spec on the Details tab, the job's log on the Logs tab. Opened by
// `?job=ID` on any page, so it can be linked to.

import { api } from "./api.js";
import { actionBar, jobActions } from "./actions.js";
import { templatesSection } from "./drawer_templates.js";
import { createLogView } from "./logs.js";
import { retriesSection } from "./retries.js";
import {
  ACTIVE_STATES, errorText, fill, fmtBytes, fmtCpu, fmtTime, forecastText, h, notice, runtime, shortRunId, stateBadge,
} from "./dom.js";

function summary(detail) {
  const job = detail.job;
  const rows = [
    ["Queue", h("a", { href: `/jobs?queue=${encodeURIComponent(job.queue)}` }, job.queue)],
    ["Job set", h("a", { href: `/jobs?${new URLSearchParams({ queue: job.queue, jobSet: job.jobSet })}` }, job.jobSet)],
    ["Owner", job.owner], ["Namespace", job.namespace],
    ["Priority", job.priority], ["Priority class", job.priorityClass],
    ["Resources", `cpu ${fmtCpu(job.cpuMillis)}, memory ${fmtBytes(job.memoryBytes)}${job.gpu ? `, gpu ${job.gpu}` : ""}`],
    ["Cluster / node", job.cluster ? `${job.cluster} / ${job.node}` : "—"],
    ["Submitted", fmtTime(job.submitted)], ["Last transition", fmtTime(job.lastTransition)],
    ["Runtime", runtime(job) || "—"], ["Attempts", detail.attempts],
    ["Exit code", job.exitCode ?? "—"],
    detail.gangId ? ["Gang", detail.gangId] : null,
    detail.cancelUser ? ["Cancelled by", `${detail.cancelUser}${detail.cancelReason ? `: ${detail.cancelReason}` : ""}`] : null,
    Object.keys(job.annotations).length
      ? ["Annotations", h("ul", { class: "plain" }, Object.entries(job.annotations).map(([k, v]) => h("li", { class: "mono" }, `${k}=${v}`)))]
      : null,
  ];
  return h("dl", { class: "kv" }, rows.filter(Boolean).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens > 10 && tens < 14 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
  return `${n}${suffix}`;
}

/** The scheduler's report on a queued job: why it waits, its place in line, its scheduling key. */
function reportView(report) {
  const key = report.key;
  const rows = [
    report.forecast && forecastText(report.forecast) ? ["Expected start", forecastText(report.forecast)] : null,
    report.position ? ["Place in queue", `${ordinal(report.position)} of ${report.queuedInQueue} queued in ${report.queue}`] : null,
    key ? ["Scheduling key", `#${key.key} · ${key.priorityClass} · ${Object.entries(key.requests).map(([r, q]) => `${r} ${q}`).join(", ")}`] : null,
    key ? ["Same key waiting", `${key.queued} job${key.queued === 1 ? "" : "s"}${key.pools.length ? ` · pools ${key.pools.join(", ")}` : ""}`] : null,
    key && Object.keys(key.nodeSelector).length ? ["Node selector", Object.entries(key.nodeSelector).map(([k, v]) => `${k}=${v}`).join(", ")] : null,
    key && key.gangCardinality > 1 ? ["Gang size", key.gangCardinality] : null,
    ["Decided", report.cycleFinished ? `by the cycle that finished ${fmtTime(report.cycleFinished)}` : "no scheduling cycle yet"],
  ];
  return [h("p", { class: "reason" }, h("b", {}, report.reason || "no reason reported")),
    h("dl", { class: "kv" }, rows.filter(Boolean).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))];
}

/** Fill `slot` with the job's scheduling report (GET /v1/job/{id}/scheduler-report). */
async function whyPending(slot, jobId) {
  try {
    fill(slot, reportView(await api.schedulerReport(jobId)));
  } catch (error) {
    fill(slot, notice(error.status === 404
      ? "No scheduling report for this job on this server."
      : `Could not load the scheduling report: ${errorText(error)}`, error.status === 404 ? "empty" : "error"));
  }
}

function failure(detail) {
  const job = detail.job;
  if (!job.reason && !detail.logTail) return "";
  return h("section", { class: "failure" }, h("h3", {}, job.state === "FAILED" ? "Failure" : "Reason"),
    job.reason ? h("p", { class: "reason" }, job.reason) : "",
    detail.logTail ? [h("h4", {}, "Log tail"), h("pre", { class: "log" }, detail.logTail)] : "");
}

// A host, or host:port, as executors report an exposed port's address: anything else is shown
// as text, never made into a link.
const ADDRESS = /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$/;

/** Each exposed port's address: a link (opened apart from Lookout) when it is one. */
function addressList(addresses) {
  const entries = Object.entries(addresses || {});
  if (!entries.length) return "";
  return h("ul", { class: "plain addresses" }, entries.map(([port, address]) => h("li", {},
    `${port} → `,
    ADDRESS.test(address)
      ? h("a", { href: `http://${address}/`, target: "_blank", rel: "noopener noreferrer", class: "mono" }, address)
      : h("span", { class: "mono" }, address))));
}

function runsTable(runs) {
  if (!runs.length) return notice("No runs yet: the job has not been leased to a node.");
  const exposes = runs.some((run) => Object.keys(run.ingressAddresses || {}).length);
  const heads = ["Run", "State", "Cluster", "Node", "Leased", "Started", "Finished", "Exit", ...(exposes ? ["Addresses"] : [])];
  return h("div", { class: "table-wrap" }, h("table", { class: "runs" },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", {}, t)))),
    h("tbody", {}, runs.map((run) => h("tr", {},
      h("td", { class: "mono", title: run.runId }, shortRunId(run.runId)), h("td", {}, run.state),
      h("td", {}, run.cluster), h("td", {}, run.node), h("td", {}, fmtTime(run.leased)),
      h("td", {}, fmtTime(run.started)), h("td", {}, fmtTime(run.finished)), h("td", {}, run.exitCode ?? ""),
      exposes ? h("td", {}, addressList(run.ingressAddresses)) : "")))));
}

function fieldText(value) {
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function timeline(events) {
  return h("ol", { class: "timeline" }, events.map((event) => h("li", { dataset: { type: event.type } },
    h("time", { datetime: event.created }, fmtTime(event.created)),
    h("span", { class: `badge event-${event.type}` }, event.type),
    h("span", { class: "event-fields" }, Object.entries(event.fields)
      .filter(([key]) => key !== "logTail")
      .map(([key, value]) => h("span", { class: "field-pair" }, h("b", {}, key), " ", fieldText(value)))))));
}

export function createDrawer(el, app) {
  let jobId = null;
  let logView = null;
  const details = h("div", { class: "tab-panel", role: "tabpanel" });
  const logs = h("div", { class: "tab-panel", role: "tabpanel", hidden: true });
  const tabs = { Details: details, Logs: logs };
  const tabButtons = Object.keys(tabs).map((name) =>
    h("button", { class: "tab", role: "tab", "aria-selected": name === "Details" ? "true" : "false", onclick: () => show(name) }, name));
  const body = h("div", { class: "drawer-body" }, h("div", { class: "tabs", role: "tablist" }, tabButtons), details, logs);
  const title = h("h2", { class: "mono" });
  fill(el, h("header", {}, title, h("button", { class: "button close", "aria-label": "Close", onclick: () => app.closeJob() }, "×")), body);

  function show(name) {
    for (const button of tabButtons) button.setAttribute("aria-selected", String(button.textContent === name));
    for (const [tab, panel] of Object.entries(tabs)) panel.hidden = tab !== name;
    if (name === "Logs" && logView) logView.start();
  }

  async function refresh() {
    if (!jobId) return;
    const asked = jobId;
    try {
      const detail = await api.job(asked);
      if (asked !== jobId) return;
      const state = detail.job.state;
      fill(title, asked, " ", stateBadge(state));
      // Live refreshes redraw the report in place: no loading flash, only the new content.
      const previous = details.querySelector("section.pending > div");
      const pending = state === "QUEUED" ? h("div", {}, previous ? [...previous.childNodes] : notice("Loading…", "loading")) : null;
      const actions = jobActions(api, [asked]);
      if (state === "QUEUED") delete actions.preempt;
      if (logView) logView.update(detail);
      fill(details,
        ACTIVE_STATES.includes(state)
          ? actionBar({ actions, done: (message, kind) => { app.toast(message, kind); refresh(); } })
          : "",
        pending ? h("section", { class: "pending" }, h("h3", {}, "Why pending"), pending) : "",
        failure(detail),
        h("section", {}, h("h3", {}, "Details"), summary(detail)),
        templatesSection(detail, app),
        h("section", {}, h("h3", {}, "Runs"), runsTable(detail.runs)),
        retriesSection(detail.retries),
        h("section", {}, h("h3", {}, "Events"), timeline(detail.events)),
        h("section", {}, h("h3", {}, "Spec"), h("pre", { class: "spec" }, detail.specYaml)));
      if (pending) whyPending(pending, asked);
    } catch (error) {
      if (asked !== jobId) return;
      fill(title, asked);
      fill(details, notice(error.status === 404 ? "No such job." : `Could not load the job: ${errorText(error)}`, "error"));
    }
  }

  return {
    open(id) {
      if (id === jobId) return;
      jobId = id;
      el.hidden = false;
      fill(title, id);
      fill(details, notice("Loading…", "loading"));
      if (logView) logView.stop();
      logView = createLogView(id);
      fill(logs, logView.el);
      show("Details");
      refresh();
    },
    close() {
      jobId = null;
      if (logView) logView.stop();
      logView = null;
      el.hidden = true;
    },
    refresh,
  };
}
