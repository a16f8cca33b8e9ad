// The jobs page's state lives in its URL (shareable, reloadable): parse and write it here only.
//
//   /jobs?queue=Q&jobSet=S&state=RUNNING&state=QUEUED&jobId=01h&owner=me&annotation=k%3Dv
//        &from=2026-11-22T06:00&to=...&sort=submitted&dir=desc&page=2&size=100&job=ID
//        &groupBy=queue&groupBy=annotation:team   (nested groups, outermost first)
//        &match=node:startsWith:gpu-&match=priority:greaterThan:2   (column:match:value; anyOf: a,b,c)

import { STATES } from "../dom.js";

export const SORTS = { submitted: "Submitted", lastTransition: "Last transition", priority: "Priority" };
/** Columns jobs can be grouped by; `annotation:KEY` groups by an annotation's value. */
export const GROUPS = {
  queue: "Queue", jobSet: "Job set", state: "State", owner: "Owner", namespace: "Namespace",
  priorityClass: "Priority class", cluster: "Cluster", node: "Node", pool: "Pool",
};
export const MAX_GROUP_LEVELS = 4;
export const SIZES = [25, 50, 100, 200];
const TEXT = ["queue", "jobSet", "jobId", "owner"];

/** The page's view from URL parameters (unknown values fall back to defaults). */
export function readView(params) {
  const view = { sort: "submitted", dir: "desc", page: 1, size: 100, from: "", to: "" };
  for (const name of TEXT) view[name] = params.get(name) || "";
  view.states = params.getAll("state").flatMap((s) => s.split(",")).map((s) => s.toUpperCase())
    .filter((s) => STATES.includes(s));
  view.annotations = params.getAll("annotation").filter((a) => a.includes("="));
  view.matches = params.getAll("match").map(parseMatch).filter(Boolean);
  if (params.get("sort") in SORTS) view.sort = params.get("sort");
  if (params.get("dir") === "asc") view.dir = "asc";
  view.groupBy = params.getAll("groupBy").filter((level) => level in GROUPS || /^annotation:./.test(level))
    .filter((level, at, all) => all.indexOf(level) === at).slice(0, MAX_GROUP_LEVELS);
  const page = Number.parseInt(params.get("page"), 10);
  if (page > 0) view.page = page;
  const size = Number.parseInt(params.get("size"), 10);
  if (SIZES.includes(size)) view.size = size;
  view.from = params.get("from") || "";
  view.to = params.get("to") || "";
  return view;
}

/** URL parameters for a view, leaving defaults out so links stay short; keeps `job`. */
export function writeView(view, previous) {
  const params = new URLSearchParams();
  for (const name of TEXT) if (view[name]) params.set(name, view[name]);
  for (const state of view.states) params.append("state", state);
  for (const annotation of view.annotations) params.append("annotation", annotation);
  for (const { column, match, value } of view.matches) params.append("match", `${column}:${match}:${value}`);
  if (view.from) params.set("from", view.from);
  if (view.to) params.set("to", view.to);
  if (view.sort !== "submitted") params.set("sort", view.sort);
  if (view.dir !== "desc") params.set("dir", view.dir);
  if (view.page !== 1) params.set("page", String(view.page));
  if (view.size !== 100) params.set("size", String(view.size));
  for (const level of view.groupBy) params.append("groupBy", level);
  if (previous && previous.get("job")) params.set("job", previous.get("job"));
  return params;
}

/** `column:match:value` (the value may hold colons) as a match, or null. */
function parseMatch(text) {
  const [column, match, ...rest] = text.split(":");
  return column && match ? { column, match, value: rest.join(":") } : null;
}

/** Local date-time input ("2026-11-22T06:00") as an ISO instant, or null. */
function instant(local) {
  if (!local) return null;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** The API filter for a view. */
export function apiFilter(view) {
  const annotations = {};
  for (const annotation of view.annotations) {
    const at = annotation.indexOf("=");
    annotations[annotation.slice(0, at).trim()] = annotation.slice(at + 1).trim();
  }
  const matches = view.matches.map(({ column, match, value }) => match === "anyOf"
    ? { column, match, values: value.split(",").map((v) => v.trim()).filter(Boolean) }
    : { column, match, value });
  const filter = {
    queue: view.queue, jobSet: view.jobSet, states: view.states, jobId: view.jobId, owner: view.owner, annotations,
    matches,
  };
  const from = instant(view.from);
  const to = instant(view.to);
  if (from) filter.submittedFrom = from;
  if (to) filter.submittedTo = to;
  return filter;
}
