// The jobs page's filter bar: every control edits the view, which the page writes to the URL.

import { h, STATES } from "../dom.js";
import { matchFilters } from "./jobs_matches.js";
import { SIZES, SORTS } from "./jobs_url.js";

const TYPING_DELAY_MS = 350;

/** Build the filter bar for `view`; `onChange(patch)` gets the changed fields. */
export function filterBar(view, queues, onChange) {
  let timer = null;
  const typed = (name) => (event) => {
    clearTimeout(timer);
    const value = event.target.value.trim();
    timer = setTimeout(() => onChange({ [name]: value }), TYPING_DELAY_MS);
  };
  const text = (name, label, placeholder, extra = {}) =>
    h("label", { class: "field" }, h("span", {}, label),
      h("input", { type: "search", name, value: view[name], placeholder, oninput: typed(name), ...extra }));
  const states = h("fieldset", { class: "states" }, h("legend", {}, "State"),
    STATES.map((state) => h("label", { class: `chip state-${state.toLowerCase()}` },
      h("input", {
        type: "checkbox", name: "state", value: state, checked: view.states.includes(state),
        onchange: () => onChange({
          states: [...states.querySelectorAll("input:checked")].map((input) => input.value),
        }),
      }), state)));
  const select = (name, label, options, value) =>
    h("label", { class: "field" }, h("span", {}, label),
      h("select", { name, onchange: (event) => onChange({ [name]: event.target.value }) },
        Object.entries(options).map(([key, text]) => h("option", { value: key, selected: key === value }, text))));
  const when = (name, label) =>
    h("label", { class: "field" }, h("span", {}, label),
      h("input", {
        type: "datetime-local", name, value: view[name], step: 1,
        onchange: (event) => onChange({ [name]: event.target.value }),
      }));
  return h("form", { class: "filters", onsubmit: (event) => event.preventDefault() },
    h("div", { class: "filter-row" },
      text("queue", "Queue", "any", { list: "queue-names" }),
      h("datalist", { id: "queue-names" }, queues.map((name) => h("option", { value: name }))),
      text("jobSet", "Job set", "any"),
      text("jobId", "Job id", "prefix"),
      text("owner", "Owner", "any"),
      h("label", { class: "field" }, h("span", {}, "Annotation"),
        h("input", {
          type: "search", name: "annotation", value: view.annotations.join(", "), placeholder: "key=value, …",
          oninput: (event) => {
            clearTimeout(timer);
            const value = event.target.value;
            timer = setTimeout(() => onChange({
              annotations: value.split(",").map((a) => a.trim()).filter((a) => a.includes("=")),
            }), TYPING_DELAY_MS);
          },
        })),
      when("from", "Submitted from"),
      when("to", "to")),
    h("div", { class: "filter-row" },
      states,
      select("sort", "Sort by", SORTS, view.sort),
      select("dir", "Order", { desc: "Descending", asc: "Ascending" }, view.dir),
      select("size", "Page size", Object.fromEntries(SIZES.map((n) => [n, String(n)])), String(view.size)),
      h("a", { class: "button link", href: "/jobs" }, "Clear filters")),
    matchFilters(view, onChange));
}
