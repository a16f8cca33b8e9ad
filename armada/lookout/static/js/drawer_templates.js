// The job drawer's configured links and commands (settings `lookout.links`, `lookout.commands`),
// filled in by the server with the job's values escaped (URL-encoded, shell-quoted). Shown
// as text and href only; a link is made only of an http(s) URL.

import { errorText, h } from "./dom.js";

const WEB = /^https?:\/\//i;

async function copyCommand(text, app) {
  try {
    await navigator.clipboard.writeText(text);
    app.toast("Command copied.");
  } catch (error) {
    app.toast(`Could not copy: ${errorText(error)}`, "error");
  }
}

/** The "Links and commands" section, or "" when none is configured (or applies yet). */
export function templatesSection(detail, app) {
  const links = (detail.links || []).filter((link) => WEB.test(link.href));
  const commands = detail.commands || [];
  if (!links.length && !commands.length) return "";
  return h("section", { class: "job-templates" }, h("h3", {}, "Links and commands"),
    links.length ? h("ul", { class: "plain job-links" }, links.map((link) => h("li", {},
      h("a", { href: link.href, target: "_blank", rel: "noopener noreferrer" }, link.name)))) : "",
    commands.map((command) => h("div", { class: "job-command", dataset: { command: command.name } },
      h("h4", {}, command.name),
      command.description ? h("p", { class: "hint" }, command.description) : "",
      h("div", { class: "command-line" },
        h("pre", { class: "command" }, command.command),
        h("button", { class: "button", "aria-label": `Copy ${command.name}`, onclick: () => copyCommand(command.command, app) }, "Copy")))));
}
