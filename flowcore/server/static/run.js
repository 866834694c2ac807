// One run: its graph with live node status, node details, the answer box of a
// paused run, and its result. Follows the run's event stream while it goes on.

import { api, streamEvents } from "./api.js";
import { clear, el, pretty, tokens, when } from "./dom.js";
import { drawGraph } from "./graph.js";

// Server node statuses (run detail) and event types, to the viewer's six statuses.
const FROM_DETAIL = {
  pending: "pending",
  running: "running",
  completed: "done",
  done: "done",
  failed: "failed",
  skipped: "skipped",
  interrupted: "paused",
  paused: "paused",
};
const FROM_EVENT = {
  node_start: "running",
  node_end: "done",
  node_error: "failed",
  node_skipped: "skipped",
  interrupt: "paused",
};
const ENDED = new Set(["completed", "failed", "cancelled", "interrupted"]);
const MAX_CHAIN = 20;
const RETRY_MS = 2000;

// The runs this one continues (oldest first): their node states show on the graph.
async function predecessors(detail) {
  const chain = [];
  let previous = detail.continues;
  while (previous && chain.length < MAX_CHAIN) {
    const run = await api(`/api/runs/${encodeURIComponent(previous)}`);
    chain.unshift(run);
    previous = run.continues;
  }
  return chain;
}

function skeleton(runId) {
  const page = {
    status: el("span", { id: "run-status", class: "badge", "data-status": "loading", text: "loading" }),
    target: el("span", { id: "run-target" }),
    tokens: el("span", { id: "run-tokens" }),
    started: el("span", { id: "run-started" }),
    links: el("span", { id: "run-links" }),
    graph: el("div", { id: "graph", class: "graph-box" }),
    detail: el("aside", { id: "node-detail", class: "panel" }, el("p", { class: "hint", text: "Click a node to see its inputs, outputs and tokens." })),
    interrupts: el("section", { id: "interrupts", class: "panel", hidden: true }),
    result: el("section", { id: "run-result", class: "panel", hidden: true }),
    mermaid: el("pre", { id: "mermaid-text" }),
    problem: el("p", { id: "run-error", class: "error", role: "alert" }),
  };
  const copy = el("button", {
    type: "button",
    text: "Copy",
    onclick: () => navigator.clipboard?.writeText(page.mermaid.textContent).catch(() => {}),
  });
  page.root = el(
    "section",
    { class: "run", "data-run": runId },
    el("h2", {}, "Run ", el("code", { id: "run-id", text: runId })),
    el("p", { class: "meta" }, page.target, " · ", page.status, " · tokens ", page.tokens, " · started ", page.started, " ", page.links),
    page.problem,
    el("div", { class: "columns" }, page.graph, page.detail),
    page.interrupts,
    page.result,
    el("details", { id: "mermaid" }, el("summary", { text: "Mermaid text of the graph" }), page.mermaid, copy),
  );
  return page;
}

function runLink(id, text) {
  return el("a", { href: `#/runs/${encodeURIComponent(id)}`, text });
}

/** Show run runId in main; returns a function that stops following it. */
export function showRun(main, runId) {
  const abort = new AbortController();
  const page = skeleton(runId);
  clear(main).append(page.root);
  const state = {
    nodes: new Map(), // node -> NodeView-like record (inputs, outputs, error, tokens)
    streamed: new Map(), // node -> {input, output} tokens seen on this run's stream
    totals: { input: 0, output: 0 },
    detail: null,
    chart: null,
    selected: null,
    io: new Map(), // node -> {inputs, outputs} from the thread's checkpoints
    ioStale: true,
    ioPending: null,
  };

  function setStatus(node, status) {
    if (!state.chart) return;
    state.chart.setStatus(node, status);
    const record = state.nodes.get(node) || { node };
    record.status = status;
    state.nodes.set(node, record);
    if (state.selected === node) showNode(node);
  }

  // Inputs and outputs read from the thread's checkpoints (GET .../nodes), fetched when a
  // node is shown and again after the run's events say a node has written something.
  function readIO() {
    if (!state.ioPending) {
      state.ioStale = false;
      state.ioPending = api(`/api/runs/${encodeURIComponent(runId)}/nodes`)
        .then((data) => {
          state.io = new Map(data.nodes.map((n) => [n.node, n]));
        })
        .catch(() => {}) // the detail panel still shows what the run detail has
        .finally(() => {
          state.ioPending = null;
        });
    }
    return state.ioPending;
  }

  function renderNode(node) {
    const record = state.nodes.get(node) || { node, status: "pending" };
    const io = state.io.get(node) || {};
    const seen = state.streamed.get(node) || { input: 0, output: 0 };
    const input = Math.max(record.input_tokens || 0, seen.input);
    const output = Math.max(record.output_tokens || 0, seen.output);
    const inputs = record.inputs ?? io.inputs;
    const outputs = record.outputs ?? io.outputs;
    const parts = [
      el("h3", {}, "Node ", el("code", { id: "node-name", text: node })),
      el("p", {}, "Status: ", el("span", { id: "node-status", class: "badge", "data-status": record.status || "pending", text: record.status || "pending" })),
      el("p", {}, "Tokens: ", el("span", { id: "node-tokens", text: tokens(input, output) })),
      el("h4", { text: "Inputs" }),
      el("pre", { id: "node-inputs", text: pretty(inputs) }),
      el("h4", { text: "Outputs" }),
      el("pre", { id: "node-outputs", text: pretty(outputs) }),
      record.error ? el("h4", { text: "Error" }) : null,
      record.error ? el("pre", { id: "node-error", class: "error", text: record.error }) : null,
    ];
    clear(page.detail).append(...parts.filter(Boolean));
  }

  function showNode(node) {
    state.selected = node;
    state.chart?.select(node);
    renderNode(node);
    if (state.ioStale || !state.io.has(node)) {
      readIO().then(() => {
        if (state.selected === node && !abort.signal.aborted) renderNode(node);
      });
    }
  }

  function showTotals() {
    const d = state.detail;
    const input = Math.max(d ? d.input_tokens : 0, state.totals.input);
    const output = Math.max(d ? d.output_tokens : 0, state.totals.output);
    page.tokens.textContent = tokens(input, output);
  }

  function showSummary(detail) {
    page.status.textContent = detail.status;
    page.status.setAttribute("data-status", detail.status);
    page.target.textContent = detail.target;
    page.started.textContent = when(detail.started_at);
    clear(page.links);
    if (detail.continues) page.links.append("· continues ", runLink(detail.continues, detail.continues.slice(0, 8)), " ");
    if (detail.continued_by) {
      page.links.append("· continued by ", el("a", { id: "continued-by", href: `#/runs/${encodeURIComponent(detail.continued_by)}`, text: detail.continued_by.slice(0, 8) }));
    }
    showTotals();
  }

  function absorb(detail, own) {
    for (const view of detail.nodes) {
      const status = FROM_DETAIL[view.status] || "pending";
      const record = { ...view, status };
      // A continued run does not repeat its predecessors' finished nodes: keep what they did.
      if (!own && state.nodes.has(view.node) && status === "pending") continue;
      state.nodes.set(view.node, record);
      state.chart?.setStatus(view.node, status);
    }
  }

  function showResult(detail) {
    const parts = [];
    if (detail.error) parts.push(el("h3", { text: "Error" }), el("pre", { id: "result-error", class: "error", text: detail.error }));
    if (detail.output !== null && detail.output !== undefined) {
      const title = detail.status === "completed" ? "Output" : "State so far";
      parts.push(el("h3", { text: title }), el("pre", { id: "result-output", text: pretty(detail.output) }));
    }
    clear(page.result).append(...parts);
    page.result.hidden = parts.length === 0;
  }

  function answerBox(question) {
    const text = el("textarea", { class: "answer", rows: 3, placeholder: "Your answer", "aria-label": "Answer" });
    const mode = el("select", { class: "answer-mode", "aria-label": "Send the answer as" },
      el("option", { value: "json", text: "as JSON" }), el("option", { value: "text", text: "as text" }));
    const problem = el("p", { class: "error answer-error", role: "alert" });
    const send = el("button", { type: "button", class: "answer-send", text: "Send answer" });
    send.addEventListener("click", async () => {
      problem.textContent = "";
      let value = text.value;
      if (mode.value === "json") {
        try {
          value = JSON.parse(text.value);
        } catch {
          problem.textContent = "That is not valid JSON; fix it or choose 'as text'.";
          return;
        }
      }
      send.disabled = true;
      try {
        const created = await api(`/api/runs/${encodeURIComponent(runId)}/resume`, {
          method: "POST",
          body: { value, interrupt_id: question.interrupt_id },
        });
        location.hash = `#/runs/${encodeURIComponent(created.run_id)}`; // follow the continued run
      } catch (error) {
        problem.textContent = error.message;
        send.disabled = false;
      }
    });
    return el("div", { class: "interrupt", "data-interrupt": question.interrupt_id },
      el("p", {}, "Node ", el("code", { text: question.node }), " asks:"),
      el("pre", { class: "interrupt-value", text: pretty(question.value) }),
      text, el("div", { class: "row" }, mode, send), problem);
  }

  function showInterrupts(detail) {
    const waiting = detail.status === "interrupted" && !detail.continued_by && detail.interrupts.length > 0;
    clear(page.interrupts);
    page.interrupts.hidden = !waiting;
    if (waiting) {
      page.interrupts.append(el("h3", { text: "Waiting for an answer" }), ...detail.interrupts.map(answerBox));
    }
  }

  async function refresh() {
    const detail = await api(`/api/runs/${encodeURIComponent(runId)}`);
    state.detail = detail;
    absorb(detail, true);
    showSummary(detail);
    showInterrupts(detail);
    showResult(detail);
    if (detail.status === "completed") {
      state.chart?.setStatus("__start__", "done");
      state.chart?.setStatus("__end__", "done");
    }
    if (state.selected) showNode(state.selected);
    return detail;
  }

  function onEvent(event) {
    if (event.namespace && event.namespace.length) return; // a subgraph's own nodes
    if (event.type === "run_start") setStatus("__start__", "done");
    const status = FROM_EVENT[event.type];
    if (["node_end", "node_error", "interrupt", "done"].includes(event.type)) state.ioStale = true;
    if (status && event.node) setStatus(event.node, status);
    if (event.type === "node_error" && event.node) {
      const record = state.nodes.get(event.node) || { node: event.node };
      record.error = event.error;
      state.nodes.set(event.node, record);
    }
    if (event.type === "usage_report") {
      const seen = state.streamed.get(event.node) || { input: 0, output: 0 };
      seen.input += event.input_tokens || 0;
      seen.output += event.output_tokens || 0;
      state.streamed.set(event.node, seen);
      state.totals.input += event.input_tokens || 0;
      state.totals.output += event.output_tokens || 0;
      showTotals();
      if (state.selected === event.node) showNode(event.node);
    }
    if (event.type === "done") {
      page.status.textContent = event.status;
      page.status.setAttribute("data-status", event.status);
    }
  }

  async function follow() {
    // The stream replays the run from its first event: count its tokens afresh each time.
    state.streamed = new Map();
    state.totals = { input: 0, output: 0 };
    try {
      await streamEvents(`/api/runs/${encodeURIComponent(runId)}/events`, onEvent, abort.signal);
      page.problem.textContent = "";
    } catch (error) {
      if (abort.signal.aborted) return;
      page.problem.textContent = `The live view stopped (${error.message}); retrying.`;
    }
    if (abort.signal.aborted) return;
    const detail = await refresh(); // outputs and questions are in the run's record
    // A stream that ended before the run did (the server restarted): follow it again.
    if (!ENDED.has(detail.status) && !abort.signal.aborted) setTimeout(() => follow().catch(() => {}), RETRY_MS);
  }

  async function load() {
    const [detail, graph] = await Promise.all([
      api(`/api/runs/${encodeURIComponent(runId)}`),
      api(`/api/runs/${encodeURIComponent(runId)}/graph`),
    ]);
    if (abort.signal.aborted) return;
    state.chart = drawGraph(page.graph, graph.nodes, graph.edges, showNode);
    page.mermaid.textContent = graph.mermaid || "(no Mermaid text for this graph)";
    for (const earlier of await predecessors(detail)) absorb(earlier, false);
    state.detail = detail;
    absorb(detail, true);
    showSummary(detail);
    if (ENDED.has(detail.status)) {
      await refresh(); // nothing more will happen: no stream to follow
      return;
    }
    await follow();
  }

  load().catch((error) => {
    if (!abort.signal.aborted) page.problem.textContent = error.message;
  });
  return () => abort.abort();
}
