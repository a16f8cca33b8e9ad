// Single sign-on (when the server has it on): who is signed in, in the header; sign-in
// when nobody is (or the session has ended); sign-out. Without it, the browser's own
// credentials (basic auth) are used as before.

import { onUnauthenticated } from "./api.js";
import { h } from "./dom.js";

function signIn() {
  const next = `${location.pathname}${location.search}`;
  location.assign(`/auth/login?next=${encodeURIComponent(next)}`);
  return new Promise(() => {}); // the page is leaving: nothing else should start
}

async function signOut() {
  const response = await fetch("/auth/logout", { method: "POST" });
  const body = response.ok ? await response.json() : {};
  location.assign(body.endSessionUrl || "/?signedOut=1");
}

/** Resolves once the app may load its pages; shows the user in `slot` (a header element). */
export async function startSession(slot, main) {
  const response = await fetch("/auth/session");
  const session = response.ok ? await response.json() : { signIn: false };
  if (!session.signIn) return;
  if (!session.signedIn) {
    if (new URLSearchParams(location.search).has("signedOut")) {
      main.replaceChildren(h("p", { class: "signed-out" }, "You are signed out. ",
        h("a", { href: "/auth/login?next=%2F" }, "Sign in")));
      return new Promise(() => {});
    }
    return signIn();
  }
  onUnauthenticated(signIn);
  const groups = session.groups.filter((group) => group !== "everyone");
  slot.replaceChildren(
    h("span", { class: "user-name", title: "Signed in with single sign-on" }, session.name),
    h("span", { class: "user-groups" }, groups.join(", ")),
    h("button", { class: "link sign-out", onclick: signOut }, "Sign out"),
  );
  slot.hidden = false;
}
