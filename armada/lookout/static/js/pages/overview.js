// The overview: queues (unfinished jobs, fair vs actual share per pool), pools and executors.

import { api } from "../api.js";
import {
  errorText, fill, fmtAgo, fmtBytes, fmtCount, fmtCpu, fmtTime, h, notice, pct, usageBar,
} from "../dom.js";

const COUNTED = ["QUEUED", "LEASED", "PENDING", "RUNNING"];

function countLink(queue, state, n) {
  return n ? h("a", { href: `/jobs?queue=${encodeURIComponent(queue)}&state=${state}` }, fmtCount(n)) : "0";
}

/** Fair share (marker) against actual share (bar) in one pool. */
function shareBar(pool, share) {
  const title = `${pool}: actual ${pct(share.actualShare)}, fair ${pct(share.adjustedFairShare)} `
    + `(${pct(share.fairShare)} by weight), demand ${pct(share.demand)}`;
  return h("div", { class: "share", title },
    h("span", { class: "share-pool" }, pool),
    h("div", { class: "bar" },
      h("div", { class: "fill", style: `width:${Math.min(1, share.actualShare) * 100}%` }),
      h("div", { class: "marker", style: `left:${Math.min(1, share.adjustedFairShare) * 100}%` })),
    h("span", { class: "usage-text" }, `${pct(share.actualShare)} of ${pct(share.adjustedFairShare)} fair`));
}

function queuesTable(queues) {
  if (!queues.length) return notice("No queues yet: create one with `armada queue create NAME`.");
  return h("div", { class: "table-wrap" }, h("table", { class: "queues" },
    h("thead", {}, h("tr", {}, h("th", {}, "Queue"), h("th", { class: "num" }, "Priority factor"),
      COUNTED.map((state) => h("th", { class: "num" }, state.toLowerCase())),
      h("th", { class: "wide" }, "Share per pool (bar: actual, mark: fair)"), h("th", {}, ""))),
    h("tbody", {}, queues.map((queue) => h("tr", { dataset: { queue: queue.name } },
      h("td", {}, h("a", { href: `/jobs?queue=${encodeURIComponent(queue.name)}` }, queue.name),
        queue.cordoned ? h("span", { class: "badge cordoned" }, "cordoned") : ""),
      h("td", { class: "num" }, queue.priorityFactor),
      COUNTED.map((state) => h("td", { class: "num" }, countLink(queue.name, state, queue.counts[state] || 0))),
      h("td", { class: "wide" }, Object.keys(queue.shares).length
        ? Object.entries(queue.shares).map(([pool, share]) => shareBar(pool, share))
        : h("span", { class: "hint" }, "no share yet (no scheduling cycle on this server, or no demand)")),
      h("td", {}, h("a", { href: `/jobsets?queue=${encodeURIComponent(queue.name)}` }, "job sets"), " ",
        h("a", { href: `/usage?queue=${encodeURIComponent(queue.name)}` }, "usage")))))));
}

function resources(capacity, used) {
  return [
    h("td", { class: "wide" }, usageBar(used.cpuMillis, capacity.cpuMillis, fmtCpu)),
    h("td", { class: "wide" }, usageBar(used.memoryBytes, capacity.memoryBytes, fmtBytes)),
    h("td", { class: "num" }, capacity.gpu ? `${used.gpu} / ${capacity.gpu}` : "—"),
  ];
}

const RESOURCE_HEADINGS = [h("th", {}, "CPU (used / allocatable)"), h("th", {}, "Memory"), h("th", { class: "num" }, "GPU")];

function clusterTables(pools, executors) {
  if (!executors.length) {
    return notice("No executors have reported: start one with `armada executor`, or run `armada serve --dev`.");
  }
  return [
    h("div", { class: "table-wrap" }, h("table", { class: "pools" },
      h("thead", {}, h("tr", {}, h("th", {}, "Pool"), h("th", { class: "num" }, "Executors"),
        h("th", { class: "num" }, "Nodes"), RESOURCE_HEADINGS.map((th) => th.cloneNode(true)))),
      h("tbody", {}, pools.map((pool) => h("tr", {}, h("td", {}, pool.name), h("td", { class: "num" }, pool.executors),
        h("td", { class: "num" }, pool.nodes), resources(pool.capacity, pool.used)))))),
    h("h3", {}, "Executors"),
    h("div", { class: "table-wrap" }, h("table", { class: "executors" },
      h("thead", {}, h("tr", {}, h("th", {}, "Executor"), h("th", {}, "Pool"), h("th", { class: "num" }, "Nodes ready"),
        RESOURCE_HEADINGS.map((th) => th.cloneNode(true)), h("th", {}, "Last heartbeat"))),
      h("tbody", {}, executors.map((executor) => h("tr", { class: executor.stale ? "stale" : "" },
        h("td", {}, h("a", { href: "/executors" }, executor.executorId),
          executor.cordoned ? h("span", { class: "badge cordoned", title: executor.cordonReason || "no reason given" },
            "cordoned") : ""),
        h("td", {}, executor.pool),
        h("td", { class: "num" }, `${executor.readyNodes} / ${executor.nodes}`),
        resources(executor.capacity, executor.used),
        h("td", {}, h("time", { datetime: executor.lastSeen, title: fmtTime(executor.lastSeen) }, fmtAgo(executor.lastSeen)),
          executor.stale ? h("span", { class: "badge state-failed" }, "silent") : "")))))),
  ];
}

export function mount(main) {
  const queues = h("section", {}, notice("Loading…", "loading"));
  const clusters = h("section", {}, notice("Loading…", "loading"));
  fill(main, h("h1", {}, "Queues"), queues, h("h2", {}, "Clusters"), clusters);
  async function refresh() {
    try {
      const data = await api.overview();
      fill(queues, queuesTable(data.queues));
      fill(clusters, clusterTables(data.pools, data.executors));
    } catch (error) {
      fill(queues, notice(`Could not load the overview: ${errorText(error)}`, "error"));
      fill(clusters);
    }
  }
  refresh();
  return { refresh, update: refresh };
}
