// The drawer's "Retries" section: every attempt of a job, the failure's category and what
// decided the next (a retry policy's Retry or Fail and its rule, or the legacy path), with
// what a retry changed. Read from the job detail's `retries` (the server folds the log).

import { h, shortRunId } from "./dom.js";

function category(attempt) {
  if (!attempt.failureCategory) return "";
  return attempt.failureSubcategory ? `${attempt.failureCategory}/${attempt.failureSubcategory}` : attempt.failureCategory;
}

function decision(attempt) {
  if (!attempt.decision) return "";
  const rule = attempt.retryRule === undefined || attempt.retryRule === null ? "defaultAction" : `rule ${attempt.retryRule}`;
  return h("span", {}, h("b", { class: `decision decision-${attempt.decision.toLowerCase()}` }, attempt.decision),
    ` by ${attempt.retryPolicy} ${rule}`);
}

/** Whether the job has a retry story to tell: more than one attempt, or a policy decided
 * (as `RetryHistory.eventful` on the server, for the text surfaces). */
function hasRetries(history) {
  const attempts = history?.attempts || [];
  return attempts.length > 1 || attempts.some((attempt) => attempt.decision);
}

export function retriesSection(history) {
  if (!hasRetries(history)) return "";
  const granted = history.retriesGranted || 0;
  const heads = ["#", "Run", "Outcome", "Category", "Decision", "Retries used", "Changes", "Reason"];
  return h("section", { class: "retries" }, h("h3", {}, "Retries"),
    h("p", {}, `${granted} retr${granted === 1 ? "y" : "ies"} granted${history.retryPolicy ? ` by retry policy ${history.retryPolicy}` : ""}`),
    h("div", { class: "table-wrap" }, h("table", { class: "retries" },
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", {}, t)))),
      h("tbody", {}, history.attempts.map((attempt) => h("tr", { dataset: { outcome: attempt.outcome } },
        h("td", {}, attempt.attempt),
        h("td", { class: "mono", title: attempt.runId || "" }, shortRunId(attempt.runId)),
        h("td", {}, attempt.outcome), h("td", {}, category(attempt)), h("td", {}, decision(attempt)),
        h("td", {}, attempt.decision ? attempt.retriesUsed || 0 : ""),
        h("td", {}, (attempt.mutations || []).join("; ")),
        h("td", { class: "reason" }, attempt.reason || "")))))));
}
