// The server's JSON API as async functions; failures become ApiError with the problem's detail.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let unauthenticated = null;

/** Run `handler` (e.g. sign in again) when the server says the caller is no longer signed in. */
export function onUnauthenticated(handler) {
  unauthenticated = handler;
}

async function call(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, `cannot reach the server (${error.message})`);
  }
  if (response.status === 401 && unauthenticated) return unauthenticated();
  const text = await response.text();
  const data = text ? safeJson(text) : {};
  if (!response.ok) {
    const detail = data && (data.detail || data.title);
    const field = data && data.field ? ` (${data.field})` : "";
    throw new ApiError(response.status, `${detail || `HTTP ${response.status}`}${field}`);
  }
  return data;
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

export const api = {
  jobs: (request) => call("POST", "/api/v1/jobs", request),
  count: (filter) => call("POST", "/api/v1/jobCount", { filter }),
  groups: (request) => call("POST", "/api/v1/jobGroups", request),
  groupJobs: (request) => call("POST", "/api/v1/groupJobs", request),
  job: (jobId) => call("GET", `/api/v1/jobs/${encodeURIComponent(jobId)}`),
  overview: () => call("GET", "/api/v1/overview"),
  logs: (request) => call("POST", "/v1/binoculars/log", request),
  schedulerReport: (jobId) => call("GET", `/v1/job/${encodeURIComponent(jobId)}/scheduler-report`),
  cancel: (jobIds, reason) => call("POST", "/v1/job/cancel", { jobIds, reason }),
  reprioritize: (jobIds, newPriority) => call("POST", "/v1/job/reprioritize", { jobIds, newPriority }),
  preempt: (jobIds, reason) => call("POST", "/v1/job/preempt", { jobIds, reason }),
  cancelJobSet: (queue, jobSetId, reason) => call("POST", "/v1/jobset/cancel", { queue, jobSetId, reason }),
  reprioritizeJobSet: (queue, jobSetId, newPriority) =>
    call("POST", "/v1/job/reprioritize", { queue, jobSetId, newPriority }),
  executors: () => call("GET", "/v1/executors"),
  views: () => call("GET", "/v1/lookout/views"),
  saveView: (name, state) => call("PUT", `/v1/lookout/views/${encodeURIComponent(name)}`, { state }),
  deleteView: (name) => call("DELETE", `/v1/lookout/views/${encodeURIComponent(name)}`),
  /** GET /v1/usage with `params` ({since, until, by, resource}). */
  usage: (params) => call("GET", `/v1/usage?${new URLSearchParams(Object.entries(params).filter(([, v]) => v))}`),
  cordonExecutor: (name, cordoned, cordonReason) =>
    call("PUT", `/v1/executor_settings/${encodeURIComponent(name)}`, { name, cordoned, cordonReason }),
  cordonNode: (nodeName, executor, cordoned, reason) =>
    call("POST", `/v1/binoculars/${cordoned ? "cordon" : "uncordon"}`, { nodeName, executor, reason }),
  /** Preempt or cancel (`verb`) every job on an executor, or on one of its nodes. */
  onExecutor: (verb, executor, node) => node
    ? call("POST", `/v1/node/${verb}/${encodeURIComponent(node)}`, { name: node, executor })
    : call("POST", `/v1/executor/${verb}/${encodeURIComponent(executor)}`, { name: executor }),
};

/**
 * Follow the log's head over server-sent events: `onChange()` runs whenever it moves,
 * `onStatus(live)` when the connection drops or comes back (EventSource reconnects itself).
 */
export function followChanges(onChange, onStatus) {
  const source = new EventSource("/api/v1/changes");
  let head = null; // each (re)connection starts with the current head: refresh if it moved
  source.addEventListener("head", (event) => {
    if (head !== null && event.data !== head) onChange();
    head = event.data;
  });
  source.addEventListener("open", () => onStatus(true));
  source.addEventListener("error", () => onStatus(false));
  return source;
}
