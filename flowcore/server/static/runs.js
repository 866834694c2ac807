// The run list (refreshing while shown) and the form that starts a run.

import { api } from "./api.js";
import { clear, el, tokens, when } from "./dom.js";

const REFRESH_MS = 2000;

function startForm(problem) {
  const graph = el("select", { id: "start-graph", "aria-label": "Graph" });
  const input = el("textarea", { id: "start-input", rows: 3, "aria-label": "Input (JSON object)", text: "{}" });
  const button = el("button", { type: "submit", id: "start-run", text: "Start run" });
  const form = el("form", { id: "start-form", class: "panel" },
    el("h3", { text: "Start a run" }),
    el("label", {}, "Graph ", graph),
    el("label", {}, "Input (JSON object) ", input),
    button);
  api("/api/graphs").then((list) => {
    for (const g of list.graphs) graph.append(el("option", { value: g.name, text: `${g.name} (${g.kind})` }));
    if (list.graphs.length === 0) {
      graph.append(el("option", { value: "", text: "no graphs registered (flowcore serve --graphs)" }));
      button.disabled = true;
    }
  }).catch((error) => { problem.textContent = error.message; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.textContent = "";
    let value;
    try {
      value = JSON.parse(input.value || "{}");
    } catch {
      problem.textContent = "The input is not valid JSON: write an object such as {\"text\": \"hi\"}.";
      return;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      problem.textContent = "The input must be a JSON object, such as {\"text\": \"hi\"}.";
      return;
    }
    button.disabled = true;
    try {
      const created = await api("/api/runs", { method: "POST", body: { target: { graph: graph.value }, input: value } });
      location.hash = `#/runs/${encodeURIComponent(created.run_id)}`;
    } catch (error) {
      problem.textContent = error.message;
      button.disabled = false;
    }
  });
  return form;
}

function row(run) {
  return el("tr", { "data-run": run.run_id, "data-status": run.status },
    el("td", {}, el("a", { href: `#/runs/${encodeURIComponent(run.run_id)}`, class: "run-link", text: run.run_id.slice(0, 12) })),
    el("td", { text: run.target }),
    el("td", {}, el("span", { class: "badge", "data-status": run.status, text: run.status })),
    el("td", { text: when(run.started_at) }),
    el("td", { text: tokens(run.input_tokens, run.output_tokens) }),
    el("td", { text: [
      run.continues ? `continues ${run.continues.slice(0, 8)}` : "",
      run.continued_by ? `answered, continued by ${run.continued_by.slice(0, 8)}` : "",
    ].filter(Boolean).join(" · ") }));
}

/** Show the run list in main; returns a function that stops refreshing it. */
export function showRuns(main) {
  const problem = el("p", { id: "runs-error", class: "error", role: "alert" });
  const body = el("tbody", { id: "runs-body" });
  const table = el("table", { id: "runs", class: "runs" },
    el("thead", {}, el("tr", {}, ...["Run", "Target", "Status", "Started", "Tokens", ""].map((h) => el("th", { text: h })))),
    body);
  const empty = el("p", { id: "runs-empty", class: "hint", text: "No runs yet: start one above.", hidden: true });
  clear(main).append(el("section", { class: "runs-page" }, startForm(problem), problem, el("h2", { text: "Runs" }), table, empty));
  let stopped = false;
  let timer = null;
  async function load() {
    try {
      const list = await api("/api/runs?limit=100");
      if (stopped) return;
      clear(body).append(...list.runs.map(row));
      empty.hidden = list.runs.length > 0;
      table.setAttribute("data-loaded", "true");
    } catch (error) {
      if (!stopped) problem.textContent = error.message;
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  }
  load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
