// Usage: who used what over a range of days, from GET /v1/usage (docs/accounting.md).
// Charts: stacked usage per queue, actual vs fair share per pool, queued and running jobs
// (daily averages), wait percentiles; all queues or one (?queue=). Each chart's data can
// be read as a table and downloaded as CSV.

import { api } from "../api.js";
import { colour, loadCharts, timeChart } from "../charts.js";
import { errorText, fill, h, notice } from "../dom.js";

const DAY = 86400;
const RESOURCES = {
  cpu: { label: "CPU", unit: "core-hours", scale: 3600 },
  memory: { label: "Memory", unit: "GiB-hours", scale: 3600 * 2 ** 30 },
  "nvidia.com/gpu": { label: "GPU", unit: "GPU-hours", scale: 3600 },
  jobs: { label: "Jobs", unit: "job-hours", scale: 3600 },
};

function today() {
  return new Date().toISOString().slice(0, 10);
}

function daysAgo(n) {
  return new Date(Date.now() - n * DAY * 1000).toISOString().slice(0, 10);
}

/** Every day from `since` to `until`, inclusive. */
export function daysBetween(since, until) {
  const days = [];
  for (let t = Date.parse(`${since}T00:00:00Z`); t <= Date.parse(`${until}T00:00:00Z`); t += DAY * 1000) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}

function readUrl() {
  const params = new URLSearchParams(location.search);
  return {
    since: params.get("since") || daysAgo(13),
    until: params.get("until") || today(),
    queue: params.get("queue") || "",
    resource: params.get("resource") || "cpu",
  };
}

function usageUrl(state) {
  const params = new URLSearchParams(Object.entries(state).filter(([, v]) => v));
  return `/usage?${params}`;
}

/** Rows' values per day and per `keyName` (e.g. queue): {key: [value per day]}. */
function perKey(rows, days, keyName, value) {
  const index = new Map(days.map((day, i) => [day, i]));
  const out = {};
  for (const row of rows) {
    const key = row.key[keyName];
    out[key] ||= days.map(() => 0);
    const i = index.get(row.key.day);
    if (i !== undefined) out[key][i] += value(row);
  }
  return out;
}

function picker(state, app) {
  const since = h("input", { type: "date", name: "since", value: state.since });
  const until = h("input", { type: "date", name: "until", value: state.until });
  const resource = h("select", { name: "resource" },
    Object.entries(RESOURCES).map(([name, r]) => h("option", { value: name, selected: name === state.resource }, r.label)));
  const go = (changes) => app.navigate(usageUrl({ ...state, ...changes }));
  const preset = (n) => h("button", { type: "button", class: "link", onclick: () => go({ since: daysAgo(n - 1), until: today() }) }, `${n} days`);
  return h("form", { class: "filters usage-range", onsubmit: (event) => {
    event.preventDefault();
    go({ since: since.value, until: until.value, resource: resource.value });
  } },
  h("div", { class: "filter-row" },
    h("label", {}, "From ", since), h("label", {}, "to ", until), h("label", {}, "Resource ", resource),
    h("button", { type: "submit" }, "Show"), preset(7), preset(30), preset(90),
    state.queue ? h("a", { href: usageUrl({ ...state, queue: "" }) }, "all queues") : ""));
}

async function charts(state) {
  const range = { since: state.since, until: state.until };
  const resource = RESOURCES[state.resource] || RESOURCES.cpu;
  await loadCharts();
  const [byQueue, byPool, byDay] = await Promise.all([
    api.usage({ ...range, by: "day,queue" }),
    api.usage({ ...range, by: "day,pool,queue", resource: state.resource }),
    state.queue ? null : api.usage({ ...range, by: "day" }),
  ]);
  const days = daysBetween(byQueue.since, byQueue.until);
  const mine = (rows) => (state.queue ? rows.filter((row) => row.key.queue === state.queue) : rows);
  const queueRows = mine(byQueue.rows);
  const used = perKey(queueRows, days, "queue", (row) => (row.used[state.resource] || 0) / resource.scale);
  const figures = [timeChart({
    name: "usage", title: `${resource.label} used per queue (stacked)`, unit: resource.unit, days, stacked: true,
    series: Object.entries(used).map(([queue, values]) => ({ label: queue, values })),
  })];
  const pools = {};
  for (const row of mine(byPool.rows)) (pools[row.key.pool] ||= []).push(row);
  for (const [pool, rows] of Object.entries(pools)) {
    const actual = perKey(rows, days, "queue", (row) => row.share[state.resource] || 0);
    const fair = perKey(rows, days, "queue", (row) => row.fairShare || 0);
    figures.push(timeChart({
      name: `share-${pool}`, title: `Actual vs fair share of pool ${pool} (${resource.label})`, unit: "share", days,
      series: Object.keys(actual).flatMap((queue, i) => [
        { label: `${queue} actual`, values: actual[queue], colour: colour(i) },
        { label: `${queue} fair`, values: fair[queue], dash: [6, 4], colour: colour(i) },
      ]),
    }));
  }
  const counts = state.queue ? queueRows : byDay.rows;
  const running = perKey(counts, days, "day", (row) => (row.used.jobs || 0) / DAY);
  const queued = perKey(counts, days, "day", (row) => (row.waits ? row.waits.mean * row.waits.leases : 0) / DAY);
  const total = (perDay) => days.map((_, i) => Object.values(perDay).reduce((sum, values) => sum + values[i], 0));
  figures.push(timeChart({
    name: "counts", title: "Queued and running jobs (daily averages)", unit: "jobs", days,
    series: [{ label: "running", values: total(running) }, { label: "queued", values: total(queued) }],
  }));
  const waits = new Map(counts.map((row) => [row.key.day, row.waits]));
  const percentile = (name) => days.map((day) => (waits.get(day) ? waits.get(day)[name] : null));
  figures.push(timeChart({
    name: "waits", title: "Wait before lease: percentiles", unit: "seconds", days,
    series: [{ label: "p50", values: percentile("p50") }, { label: "p90", values: percentile("p90") },
      { label: "p99", values: percentile("p99") }],
  }));
  return figures;
}

export function mount(main, app) {
  let state = readUrl();
  const body = h("div", { class: "charts" });

  async function refresh() {
    try {
      fill(body, ...(await charts(state)));
    } catch (error) {
      fill(body, notice(errorText(error), "error"));
    }
  }

  function update() {
    state = readUrl();
    const title = state.queue ? `Usage of queue ${state.queue}` : "Usage";
    fill(main, h("h1", {}, title), picker(state, app), body);
    fill(body, notice("Loading…", "loading"));
    refresh();
  }

  update();
  return { refresh, update };
}
