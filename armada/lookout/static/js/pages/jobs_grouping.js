// Nested grouping of the jobs table: group rows with their job count and summed requests,
// each expandable into the next level, and the last level into its jobs. Every level is
// one POST /api/v1/groupJobs with the page's filter and, in `within`, the groups above it;
// the jobs of a group are the table's own query with the same `within`.

import { api } from "../api.js";
import { fmtBytes, fmtCount, fmtCpu, h, notice } from "../dom.js";
import { column, shownColumns } from "./jobs_columns.js";
import { resizableColumns } from "./jobs_resize.js";
import { GROUPS, MAX_GROUP_LEVELS } from "./jobs_url.js";

const ANNOTATION = "annotation:";
const GROUPS_PER_LEVEL = 200;
const JOBS_STEP = 100;

/** The API's group key for a URL level (`queue`, `annotation:team`). */
function groupKey(level) {
  return level.startsWith(ANNOTATION)
    ? { column: "annotation", annotation: level.slice(ANNOTATION.length) }
    : { column: level };
}

function label(level) {
  return level.startsWith(ANNOTATION) ? `Annotation ${level.slice(ANNOTATION.length)}` : GROUPS[level];
}

/** The "Group by" control: one select per level, a select to add one, an annotation key. */
export function groupingBar(view, onChange) {
  const levels = view.groupBy;
  const set = (next) => onChange({ groupBy: next });
  const options = (current) => Object.entries(GROUPS)
    .filter(([id]) => id === current || !levels.includes(id))
    .map(([id, text]) => h("option", { value: id, selected: id === current }, text));
  const key = h("input", { type: "text", name: "group-annotation", placeholder: "annotation key", "aria-label": "Group by annotation key", hidden: true });
  const add = h("select", {
    name: "group-add", "aria-label": "Add a grouping level",
    onchange: (event) => {
      const value = event.target.value;
      if (value === "annotation") {
        key.hidden = false;
        key.focus();
      } else if (value) set([...levels, value]);
    },
  }, h("option", { value: "" }, levels.length ? "+ level" : "—"), options(""),
  h("option", { value: "annotation" }, "Annotation…"));
  const addAnnotation = h("form", {
    class: "group-annotation",
    onsubmit: (event) => {
      event.preventDefault();
      const level = `${ANNOTATION}${key.value.trim()}`;
      if (level !== ANNOTATION && !levels.includes(level)) set([...levels, level]);
    },
  }, key);
  return h("div", { class: "grouping", role: "group", "aria-label": "Group by" },
    h("span", { class: "grouping-title" }, "Group by"),
    levels.map((level, at) => h("span", { class: "group-level", dataset: { level } },
      level.startsWith(ANNOTATION)
        ? h("span", { class: "chip" }, label(level))
        : h("select", {
          name: `group-${at}`, "aria-label": `Grouping level ${at + 1}`,
          onchange: (event) => set(levels.map((old, i) => (i === at ? event.target.value : old))),
        }, options(level)),
      h("button", { class: "link", "aria-label": `Stop grouping by ${label(level)}`, onclick: () => set(levels.filter((_, i) => i !== at)) }, "×"),
      at < levels.length - 1 ? h("span", { class: "hint" }, "›") : "")),
    levels.length < MAX_GROUP_LEVELS ? [add, addAnnotation] : "");
}

/**
 * The grouped table for `view` into `results`: group rows (expanded ones followed by their
 * contents), drawn once every expanded level has been read. `expanded` (paths) and
 * `shown` (jobs per expanded last level) survive redraws, so live refreshes keep them.
 */
export async function drawGroups(results, view, filter, app, expanded, shown, isCurrent, redraw) {
  const levels = view.groupBy;
  const ids = shownColumns();
  const columns = ids.map(column);
  const width = columns.length + 1;
  const order = { field: view.sort, direction: view.dir };

  const jobRows = async (within, depth, path) => {
    const take = shown.get(path) || JOBS_STEP;
    const { jobs, hasMore } = await api.jobs({ filter: { ...filter, within }, order, skip: 0, take });
    const rows = jobs.map((job) => h("tr", { class: "group-job", dataset: { jobId: job.jobId, state: job.state, depth } },
      h("td", {}), columns.map(([, cell, cls]) => h("td", { class: cls }, cell(job, app)))));
    if (hasMore && take < 500) {
      rows.push(h("tr", { class: "group-more" }, h("td", { colspan: width },
        h("button", { class: "link", onclick: () => { shown.set(path, take + JOBS_STEP); redraw(); } }, `Show ${JOBS_STEP} more`))));
    }
    return rows;
  };

  const levelRows = async (within, depth) => {
    if (depth === levels.length) return jobRows(within, depth, JSON.stringify(within));
    const level = levels[depth];
    const { groups, hasMore } = await api.groupJobs({
      filter: { ...filter, within }, groupBy: groupKey(level), take: GROUPS_PER_LEVEL,
    });
    const nested = await Promise.all(groups.map((group) => {
      const inside = [...within, { ...groupKey(level), value: group.value }];
      const path = JSON.stringify(inside);
      const open = expanded.has(path);
      const toggle = () => {
        open ? expanded.delete(path) : expanded.add(path);
        redraw();
      };
      const row = h("tr", { class: `group-row depth-${depth}`, dataset: { depth, value: group.value, count: group.count } },
        h("td", { colspan: width },
          h("button", { class: "group-toggle link", "aria-expanded": String(open), onclick: toggle },
            h("span", { class: "twisty" }, open ? "▾" : "▸"),
            h("span", { class: "group-label" }, `${label(level)}: `),
            h("span", { class: "group-value" }, group.value === "" ? "(none)" : group.value)),
          h("span", { class: "group-stats" },
            h("span", { class: "group-count" }, `${fmtCount(group.count)} job${group.count === 1 ? "" : "s"}`),
            ` · CPU ${fmtCpu(group.cpuMillis)} · memory ${fmtBytes(group.memoryBytes)} · GPU ${group.gpu}`)));
      return open ? levelRows(inside, depth + 1).then((rows) => [row, ...rows]) : [row];
    }));
    const rows = nested.flat();
    if (hasMore) rows.push(h("tr", {}, h("td", { colspan: width, class: "hint" }, `Only the first ${GROUPS_PER_LEVEL} groups are shown: narrow the filter.`)));
    return rows;
  };

  const rows = await levelRows([], 0);
  if (!isCurrent()) return;
  if (!rows.length) {
    results.replaceChildren(notice("No jobs match these filters."));
    return;
  }
  const table = h("table", { class: "jobs grouped" },
    h("thead", {}, h("tr", {}, h("th", {}), columns.map(([title, , cls]) => h("th", { class: cls }, title)))),
    h("tbody", {}, rows));
  results.replaceChildren(h("div", { class: "table-wrap" }, table));
  resizableColumns(table, ids, { onReset: redraw });
}
