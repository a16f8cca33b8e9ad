// Actions (cancel, reprioritize, preempt; cordon, uncordon) with an inline confirmation step.
//
// One component serves the jobs table (selected jobs), the detail drawer (one job), the
// job-sets page (a whole set) and the executors page (an executor or a node): the caller
// supplies what each action does.

import { errorText, h } from "./dom.js";

/**
 * A row of action buttons. `actions` maps a name ("cancel", "reprioritize", "preempt") to
 * `async (input) => message`; `input` is the reason or the new priority. `done(message,
 * kind)` reports the outcome.
 */
export function actionBar({ label, actions, done }) {
  const bar = h("div", { class: "actions" });
  const idle = () => {
    bar.replaceChildren(label ? h("span", { class: "actions-label" }, label) : "",
      ...Object.keys(actions).map((name) =>
        h("button", { type: "button", class: `button ${name === "cancel" ? "danger" : ""}`, onclick: () => confirm(name) },
          TITLES[name])));
  };
  const confirm = (name) => {
    const input = name === "reprioritize"
      ? h("input", { type: "number", min: 0, step: 1, value: 0, "aria-label": "New priority", required: true })
      : name === "uncordon"
        ? h("input", { type: "hidden", value: "" })
        : h("input", { type: "text", placeholder: "reason (optional)", "aria-label": "Reason", maxlength: 512 });
    const go = h("button", { type: "submit", class: `button ${name === "cancel" ? "danger" : "primary"}` },
      `Confirm ${TITLES[name].toLowerCase()}`);
    const form = h("form", {
      class: "confirm",
      onsubmit: async (event) => {
        event.preventDefault();
        go.disabled = true;
        const value = name === "reprioritize" ? Number(input.value) : input.value;
        try {
          done(await actions[name](value), "ok");
        } catch (error) {
          done(`${TITLES[name]} failed: ${errorText(error)}`, "error");
        }
        idle();
      },
    }, h("span", { class: "actions-label" }, `${TITLES[name]} ${label ? label.toLowerCase() : ""}?`),
      input, go, h("button", { type: "button", class: "button", onclick: idle }, "Back"));
    bar.replaceChildren(form);
    input.focus();
  };
  idle();
  return bar;
}

const TITLES = {
  cancel: "Cancel", reprioritize: "Reprioritize", preempt: "Preempt", cordon: "Cordon", uncordon: "Uncordon",
};

/** The three actions on a list of job ids, with messages saying what happened. */
export function jobActions(api, jobIds) {
  const ids = () => (typeof jobIds === "function" ? jobIds() : jobIds);
  return {
    cancel: async (reason) => {
      const result = await api.cancel(ids(), reason);
      return countMessage("Cancelling", (result.cancelledIds || []).length, ids().length);
    },
    reprioritize: async (priority) => {
      const result = await api.reprioritize(ids(), priority);
      const failed = Object.entries(result.reprioritizationResults || {}).filter(([, why]) => why);
      const first = failed.length ? `: ${failed[0][0]} ${failed[0][1]}` : "";
      return `Priority set to ${priority} on ${ids().length - failed.length} of ${ids().length} jobs${first}`;
    },
    preempt: async (reason) => {
      const result = await api.preempt(ids(), reason);
      return countMessage("Preempting", (result.preemptedIds || []).length, ids().length);
    },
  };
}

function countMessage(verb, applied, asked) {
  const skipped = asked - applied;
  return `${verb} ${applied} job${applied === 1 ? "" : "s"}${skipped ? ` (${skipped} already finished)` : ""}`;
}
