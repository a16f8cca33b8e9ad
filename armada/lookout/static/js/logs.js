// The drawer's Logs tab: the job's log (POST /v1/binoculars/log), read from the executor that
// ran it. Following polls for the lines since the last one shown (sinceTime) while the job
// runs, and once more when it ends. A log the cluster no longer keeps (or an executor that
// cannot answer) is said so, with the failure's log tail when the job has one.

import { api } from "./api.js";
import { ACTIVE_STATES, errorText, fill, h, notice } from "./dom.js";

const POLL_MS = 2000;
/** Lines kept on screen: a chatty job must not grow the page without bound. */
const MAX_LINES = 5000;

export function createLogView(jobId) {
  const lines = h("pre", { class: "log-lines", "aria-label": "Log" });
  const status = h("div", { class: "log-status" });
  const follow = h("input", { type: "checkbox", checked: true, onchange: () => schedule() });
  const el = h("div", { class: "logs" },
    h("div", { class: "log-controls" }, h("label", {}, follow, " Follow")), status, lines);
  let since = "";
  let timer = null;
  let active = true;
  let started = false;
  let stopped = false;
  let logTail = "";

  async function poll() {
    timer = null;
    try {
      const answer = await api.logs(since ? { jobId, sinceTime: since } : { jobId });
      if (stopped) return;
      // sinceTime is inclusive: the line it names was shown already.
      const fresh = (answer.log || []).filter((line) => !since || line.timestamp !== since);
      if (fresh.length) {
        lines.append(fresh.map((line) => `${line.line}\n`).join(""));
        trim();
        lines.scrollTop = lines.scrollHeight;
        since = fresh[fresh.length - 1].timestamp || since;
      }
      fill(status, lines.textContent ? "" : notice(active ? "No output yet." : "The job wrote no output."));
    } catch (error) {
      if (stopped) return;
      const gone = error.status === 404 && !lines.textContent;
      fill(status, notice(gone ? `No log: ${errorText(error)}` : `Could not read the log: ${errorText(error)}`,
        gone ? "empty" : "error"),
        logTail && !lines.textContent ? [h("h4", {}, "Log tail (kept with the failure)"), h("pre", { class: "log" }, logTail)] : "");
    }
    schedule();
  }

  function trim() {
    const text = lines.textContent;
    const parts = text.split("\n");
    if (parts.length > MAX_LINES + 1) lines.textContent = parts.slice(parts.length - MAX_LINES - 1).join("\n");
  }

  function schedule() {
    if (!stopped && started && active && follow.checked && !timer) timer = setTimeout(poll, POLL_MS);
  }

  return {
    el,
    /** Start reading (when the tab is first shown). */
    start() {
      if (started) return;
      started = true;
      poll();
    },
    /** The drawer's latest view of the job: following ends, after a last read, when it does. */
    update(detail) {
      logTail = detail.logTail || "";
      const wasActive = active;
      active = ACTIVE_STATES.includes(detail.job.state);
      if (started && wasActive && !active && !timer) poll();
      else schedule();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
