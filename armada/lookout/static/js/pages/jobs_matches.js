// The jobs page's column filters: one column against a value with a match type
// (upstream Lookout's), shown as removable chips; each lives in the URL as `match=`.

import { h } from "../dom.js";

export const MATCH_COLUMNS = {
  queue: "Queue", jobSet: "Job set", owner: "Owner", namespace: "Namespace", priorityClass: "Priority class",
  cluster: "Cluster", node: "Node", reason: "Reason", priority: "Priority", cpuMillis: "CPU (millicores)",
  memoryBytes: "Memory (bytes)", gpu: "GPU", exitCode: "Exit code", submitted: "Submitted", lastTransition: "Last transition",
};
export const MATCHES = {
  exact: "is", startsWith: "starts with", contains: "contains", anyOf: "is any of", exists: "is set",
  greaterThan: "is greater than", lessThan: "is less than",
};

/** The column filters of `view`; `onChange(patch, { fromFilters: false })` redraws the bar. */
export function matchFilters(view, onChange) {
  const set = (matches) => onChange({ matches }, { fromFilters: false });
  const chips = view.matches.map((m, index) => h("span", { class: "chip match-chip" },
    `${MATCH_COLUMNS[m.column] || m.column} ${MATCHES[m.match] || m.match}${m.match === "exists" ? "" : ` ${m.value}`}`,
    h("button", {
      class: "link", type: "button", "aria-label": `Remove filter ${index + 1}`,
      onclick: () => set(view.matches.filter((_, other) => other !== index)),
    }, "×")));
  const options = (entries) => Object.entries(entries).map(([key, text]) => h("option", { value: key }, text));
  const column = h("select", { name: "match-column", "aria-label": "Filter column" }, options(MATCH_COLUMNS));
  const match = h("select", { name: "match-type", "aria-label": "Match" }, options(MATCHES));
  const value = h("input", { type: "text", name: "match-value", placeholder: "value (any of: a, b)", "aria-label": "Filter value" });
  const add = () => {
    const entry = { column: column.value, match: match.value, value: value.value.trim() };
    if (entry.match !== "exists" && !entry.value) return;
    set([...view.matches, entry]);
  };
  return h("div", { class: "filter-row matches" },
    h("span", { class: "matches-label" }, "Column filters"), chips, column, match, value,
    h("button", { class: "button", type: "button", onclick: add }, "Add filter"));
}
