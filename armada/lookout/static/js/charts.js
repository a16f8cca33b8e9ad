// Charts drawn with uPlot (brought in at install time: static/vendor/uplot, MIT licence),
// each with its data as a table and as a CSV download, so what is drawn can be read too.
// uPlot is loaded when a chart is first drawn: an installation without it loses the
// charts (with a message saying why), not the rest of Lookout.

import { h } from "./dom.js";

let uPlot = null;

/** Load uPlot (once); a failure names what is missing. */
export async function loadCharts() {
  if (!uPlot) {
    try {
      uPlot = (await import("/static/vendor/uplot/uPlot.esm.js")).default;
    } catch (error) {
      throw new Error(`the charting library (uPlot) is not installed: run make (${error.message})`);
    }
  }
}

const COLOURS = ["#2f5fd0", "#2e9d57", "#d9a400", "#b35fc7", "#d0393e", "#3aa6b9", "#8a8f9c", "#e07b39"];

export function colour(index) {
  return COLOURS[index % COLOURS.length];
}

/** The CSV of a table: a header row then one row per line (quoted where needed). */
export function toCsv(header, rows) {
  const cell = (value) => {
    const text = value === null || value === undefined ? "" : String(value);
    return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return [header, ...rows].map((row) => row.map(cell).join(",")).join("\n") + "\n";
}

function downloadLink(name, header, rows) {
  const link = h("a", { class: "csv", href: "#", download: `${name}.csv` }, "Download CSV");
  link.addEventListener("click", () => {
    const blob = new Blob([toCsv(header, rows)], { type: "text/csv" });
    link.href = URL.createObjectURL(blob);
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  });
  return link;
}

function round(value) {
  return value === null || value === undefined ? "" : Number(value.toPrecision(6));
}

/**
 * A time chart: `days` (YYYY-MM-DD) on x, one line per `series` ({label, values, dash?, colour?}).
 * `stacked` draws each series on top of the ones before (filled). Returns a <figure>.
 */
export function timeChart({ name, title, unit, days, series, stacked = false }) {
  const header = ["day", ...series.map((s) => s.label)];
  const rows = days.map((day, i) => [day, ...series.map((s) => round(s.values[i]))]);
  const table = h("table", { class: "chart-table" },
    h("thead", {}, h("tr", {}, header.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, row.map((value, i) => h("td", { class: i ? "num" : "" }, value))))));
  const plot = h("div", { class: "chart-plot" });
  const figure = h("figure", { class: "chart", dataset: { chart: name } },
    h("figcaption", {}, h("span", {}, title), h("span", { class: "chart-unit" }, unit), downloadLink(name, header, rows)),
    plot,
    h("details", { class: "chart-data" }, h("summary", {}, "Data"), table));
  if (!days.length) {
    plot.append(h("div", { class: "notice" }, "No data in this range."));
    return figure;
  }
  const xs = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
  let drawn = series.map((s) => s.values.map((v) => (v === null || v === undefined ? null : v)));
  if (stacked) {
    const sums = xs.map(() => 0);
    drawn = drawn.map((values) => values.map((v, i) => (sums[i] += v || 0)));
  }
  const options = {
    width: 560,
    height: 240,
    scales: { x: { time: true } },
    series: [{}, ...series.map((s, i) => ({
      label: s.label,
      stroke: s.colour || colour(i),
      width: 2,
      dash: s.dash,
      fill: stacked ? `${s.colour || colour(i)}55` : undefined,
      points: { show: days.length < 40 },
    }))],
    axes: [{}, { label: unit, size: 60 }],
  };
  // Stacked: the topmost band first, so each lower one is painted over it.
  const order = stacked ? [...drawn.keys()].reverse() : [...drawn.keys()];
  if (stacked) options.series = [{}, ...order.map((i) => options.series[i + 1])];
  figure.chart = new uPlot(options, [xs, ...order.map((i) => drawn[i])], plot);
  return figure;
}
