// The run viewer: sign-in, then #/runs, #/runs/<id> and #/blocks.

import { api, clearKey, getKey, setKey, whenUnauthorized } from "./api.js";
import { showBlocks } from "./blocks.js";
import { clear } from "./dom.js";
import { showRun } from "./run.js";
import { showRuns } from "./runs.js";

const main = document.getElementById("main");
const signin = document.getElementById("signin");
const signinForm = document.getElementById("signin-form");
const keyInput = document.getElementById("api-key");
const signinError = document.getElementById("signin-error");
const signOut = document.getElementById("sign-out");
let leave = () => {};

function askForKey(message) {
  leave();
  leave = () => {};
  clearKey();
  clear(main);
  signOut.hidden = true;
  signin.hidden = false;
  signinError.textContent = message || "";
  keyInput.focus();
}

function route() {
  leave();
  leave = () => {};
  if (!getKey()) {
    askForKey("");
    return;
  }
  signin.hidden = true;
  signOut.hidden = false;
  const path = location.hash.replace(/^#/, "") || "/runs";
  const run = path.match(/^\/runs\/([^/]+)$/);
  document.body.setAttribute("data-page", run ? "run" : path.slice(1));
  if (run) leave = showRun(main, decodeURIComponent(run[1]));
  else if (path === "/blocks") leave = showBlocks(main);
  else leave = showRuns(main);
}

signinForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) return;
  setKey(key);
  keyInput.value = "";
  try {
    await api("/api/graphs"); // checks the key before showing anything
  } catch (error) {
    askForKey(error.status === 401 ? "That key was not accepted." : error.message);
    return;
  }
  route();
});

signOut.addEventListener("click", () => askForKey("Signed out."));
whenUnauthorized(() => askForKey("The API key is not valid or was revoked; paste another one."));
window.addEventListener("hashchange", route);
route();
