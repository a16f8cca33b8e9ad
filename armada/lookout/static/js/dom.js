// Tiny DOM and formatting helpers shared by every page (no framework: the app is small).

/** Build an element: h("a", {href: "/jobs", class: "x", onclick: fn}, "text", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    // Through the CSSOM: the Content-Security-Policy refuses inline style attributes.
    else if (key === "style") el.style.cssText = value;
    else if (key in el && key !== "list" && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export const STATES = ["QUEUED", "LEASED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED"];
export const ACTIVE_STATES = ["QUEUED", "LEASED", "PENDING", "RUNNING"];

export function stateBadge(state) {
  return h("span", { class: `badge state-${state.toLowerCase()}` }, state);
}

/** An honest empty or error state, in place of a table. */
export function notice(text, kind = "empty") {
  return h("div", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function errorText(error) {
  return error && error.message ? error.message : String(error);
}

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
});

/** A run id shortened for a table cell: its last 8 characters (a ULID's first ones are its
 * time, the same for every run of a job within minutes). The full id goes in the title. */
export function shortRunId(id) {
  return id ? `…${id.slice(-8)}` : "—";
}

export function fmtTime(iso) {
  return iso ? dateTime.format(new Date(iso)) : "";
}

/** "3s", "4m 10s", "2h 5m", "3d 4h". */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtAgo(iso) {
  return iso ? `${fmtDuration(Date.now() - new Date(iso).getTime())} ago` : "";
}

/** A time cell: relative text, absolute time on hover. */
export function timeCell(iso) {
  return iso ? h("time", { datetime: iso, title: fmtTime(iso) }, fmtAgo(iso)) : "";
}

export function runtime(job) {
  if (!job.runStarted) return "";
  const end = job.runFinished ? new Date(job.runFinished) : new Date();
  return fmtDuration(end - new Date(job.runStarted));
}

/** A forecast start as "in ~12m 0s" ("now" once due; "" without one). */
export function expectedIn(iso) {
  if (!iso) return "";
  const wait = new Date(iso) - new Date();
  return wait > 0 ? `in ~${fmtDuration(wait)}` : "now";
}

/** A job's forecast (POST /v1/job/forecast's shape) in words: "in ~12m 0s (8m 0s to 20m 0s); basis: hint". */
export function forecastText(forecast) {
  if (!forecast) return "";
  switch (forecast.outcome) {
    case "FORECAST": {
      const range = forecast.low && forecast.high && forecast.low !== forecast.high
        ? ` (${expectedIn(forecast.low)} to ${expectedIn(forecast.high)})` : "";
      return `${expectedIn(forecast.expectedStart)}${range} at ${fmtTime(forecast.expectedStart)}; basis: ${forecast.basis}`;
    }
    case "NOT_WITHIN_HORIZON": return "not within the forecast horizon";
    case "NEVER": return `never: ${forecast.basis}`;
    case "NOT_YET_FORECAST": return "not yet forecast";
    default: return "";
  }
}

export function fmtCpu(millis) {
  if (!millis) return "0";
  return millis % 1000 === 0 ? String(millis / 1000) : `${(millis / 1000).toFixed(millis < 100 ? 3 : 2)}`;
}

export function fmtBytes(bytes) {
  if (!bytes) return "0";
  const units = ["B", "Ki", "Mi", "Gi", "Ti", "Pi"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)}${units[unit]}`;
}

export function fmtCount(n) {
  return new Intl.NumberFormat().format(n);
}

export function pct(fraction) {
  return `${(fraction * 100).toFixed(fraction < 0.1 && fraction > 0 ? 1 : 0)}%`;
}

/** A usage bar: `used` of `total`, with the numbers as text. */
export function usageBar(used, total, format) {
  const fraction = total > 0 ? Math.min(1, used / total) : 0;
  return h("div", { class: "usage", title: `${format(used)} of ${format(total)}` },
    h("div", { class: "bar" }, h("div", { class: "fill", style: `width:${fraction * 100}%` })),
    h("span", { class: "usage-text" }, `${format(used)} / ${format(total)}`));
}

/** A stacked bar of counts by state (job-set progress). */
export function stateBar(states, total) {
  return h("div", { class: "bar stacked", title: STATES.filter((s) => states[s]).map((s) => `${s} ${states[s]}`).join(", ") },
    STATES.filter((s) => states[s]).map((s) =>
      h("div", { class: `fill state-${s.toLowerCase()}`, style: `width:${(states[s] / total) * 100}%` })));
}

/** Milliseconds since the epoch encoded in a ULID's first ten characters. */
export function ulidTime(id) {
  const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
  let ms = 0;
  for (const char of id.slice(0, 10).toLowerCase()) ms = ms * 32 + alphabet.indexOf(char);
  return new Date(ms).toISOString();
}
