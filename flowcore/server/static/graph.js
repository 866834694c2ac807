// The run's graph as SVG: a small layered layout (topological layers, top to
// bottom) and node boxes coloured by status, updated as the run's events arrive.

import { clear, svg } from "./dom.js";

const BOX_H = 36;
const LAYER_GAP = 64;
const NODE_GAP = 28;
const MARGIN = 24;
const CHAR_W = 7.5;

export const STATUSES = ["pending", "running", "done", "failed", "paused", "skipped"];

function boxWidth(label) {
  return Math.max(84, Math.min(240, Math.round(label.length * CHAR_W) + 28));
}

// Layer of each node: the longest path to it over edges that do not close a
// cycle. Edges the server did not mark as loops but that still close a cycle
// (a drawing without that mark) are dropped by taking nodes in input order.
function layers(nodes, edges) {
  const ids = nodes.map((n) => n.id);
  const known = new Set(ids);
  const forward = edges.filter((e) => !e.loop && known.has(e.source) && known.has(e.target));
  const incoming = new Map(ids.map((id) => [id, 0]));
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of forward) {
    if (e.source === e.target) continue;
    incoming.set(e.target, incoming.get(e.target) + 1);
    out.get(e.source).push(e.target);
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  const placed = new Set();
  const ready = ids.filter((id) => incoming.get(id) === 0);
  while (placed.size < ids.length) {
    if (ready.length === 0) ready.push(ids.find((id) => !placed.has(id))); // a cycle: cut it
    const id = ready.shift();
    if (placed.has(id)) continue;
    placed.add(id);
    for (const next of out.get(id)) {
      if (placed.has(next)) continue;
      layer.set(next, Math.max(layer.get(next), layer.get(id) + 1));
      incoming.set(next, incoming.get(next) - 1);
      if (incoming.get(next) === 0) ready.push(next);
    }
  }
  // END sits below everything else.
  const deepest = Math.max(0, ...ids.filter((id) => id !== "__end__").map((id) => layer.get(id)));
  if (known.has("__end__")) layer.set("__end__", Math.max(layer.get("__end__"), deepest + 1));
  return layer;
}

/** Positions of each node: {id: {x, y, w, h, layer}} and the drawing's size. */
export function layout(nodes, edges) {
  const layer = layers(nodes, edges);
  const rows = [];
  for (const node of nodes) {
    const at = layer.get(node.id);
    (rows[at] = rows[at] || []).push(node);
  }
  // Order each row by where its predecessors sit (one barycentre pass keeps lines short).
  const order = new Map();
  rows.forEach((row, r) => {
    if (r > 0) {
      const score = (node) => {
        const from = edges.filter((e) => e.target === node.id && order.has(e.source));
        if (from.length === 0) return Number.MAX_SAFE_INTEGER;
        return from.reduce((sum, e) => sum + order.get(e.source), 0) / from.length;
      };
      row.sort((a, b) => score(a) - score(b));
    }
    row.forEach((node, i) => order.set(node.id, i));
  });
  const widths = rows.map((row) =>
    row.reduce((sum, n) => sum + boxWidth(n.label), 0) + NODE_GAP * Math.max(0, row.length - 1),
  );
  const width = Math.max(200, ...widths) + 2 * MARGIN;
  const at = {};
  rows.forEach((row, r) => {
    let x = (width - widths[r]) / 2;
    for (const node of row) {
      const w = boxWidth(node.label);
      at[node.id] = { x, y: MARGIN + r * (BOX_H + LAYER_GAP), w, h: BOX_H, layer: r };
      x += w + NODE_GAP;
    }
  });
  const height = 2 * MARGIN + rows.length * BOX_H + Math.max(0, rows.length - 1) * LAYER_GAP;
  return { at, width, height };
}

function edgePath(a, b, loop) {
  const ax = a.x + a.w / 2;
  const bx = b.x + b.w / 2;
  if (loop || b.layer <= a.layer) {
    // Back up the graph: leave from the right side and come into the target's right side.
    const sx = a.x + a.w;
    const sy = a.y + a.h / 2;
    const tx = b.x + b.w;
    const ty = b.y + b.h / 2;
    const bend = Math.max(sx, tx) + 40;
    return `M ${sx} ${sy} C ${bend} ${sy}, ${bend} ${ty}, ${tx + 2} ${ty}`;
  }
  const sy = a.y + a.h;
  const ty = b.y - 2;
  const mid = (sy + ty) / 2;
  return `M ${ax} ${sy} C ${ax} ${mid}, ${bx} ${mid}, ${bx} ${ty}`;
}

/**
 * Draw the graph into container; returns {setStatus(node, status), select(node)}.
 * onSelect(nodeId) is called when a node box is clicked (or chosen with Enter).
 */
export function drawGraph(container, nodes, edges, onSelect) {
  clear(container);
  const boxes = new Map();
  if (nodes.length === 0) {
    container.append(document.createTextNode("This run's graph is not available."));
    return { setStatus() {}, select() {} };
  }
  const { at, width, height } = layout(nodes, edges);
  const root = svg("svg", {
    viewBox: `0 0 ${width + 60} ${height}`,
    width: width + 60,
    height,
    role: "img",
    "aria-label": "The run's graph",
    class: "graph",
  });
  root.append(
    svg(
      "defs",
      {},
      svg(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }),
      ),
    ),
  );
  for (const e of edges) {
    const a = at[e.source];
    const b = at[e.target];
    if (!a || !b) continue;
    const d = edgePath(a, b, e.loop);
    root.append(svg("path", { d, class: `edge edge-${e.kind}`, "marker-end": "url(#arrow)" }));
    if (e.label) {
      const x = (a.x + a.w / 2 + b.x + b.w / 2) / 2 + 4;
      const y = (a.y + a.h + b.y) / 2;
      root.append(svg("text", { x, y, class: "edge-label", text: e.label }));
    }
  }
  for (const node of nodes) {
    const p = at[node.id];
    const special = node.kind === "start" || node.kind === "end";
    const group = svg("g", {
      class: `node status-pending${special ? " terminal" : ""}`,
      "data-node": node.id,
      "data-status": "pending",
      tabindex: special ? undefined : 0,
      role: special ? undefined : "button",
      transform: `translate(${p.x} ${p.y})`,
    });
    group.append(svg("rect", { width: p.w, height: p.h, rx: special ? p.h / 2 : 6 }));
    group.append(svg("text", { x: p.w / 2, y: p.h / 2 + 4, "text-anchor": "middle", text: node.label }));
    const title = svg("title", { text: `${node.label}: pending` });
    group.append(title);
    if (!special) {
      group.addEventListener("click", () => onSelect(node.id));
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") onSelect(node.id);
      });
    }
    root.append(group);
    boxes.set(node.id, { group, title, label: node.label });
  }
  container.append(root);
  return {
    setStatus(id, status) {
      const box = boxes.get(id);
      if (!box || !STATUSES.includes(status)) return;
      for (const s of STATUSES) box.group.classList.remove(`status-${s}`);
      box.group.classList.add(`status-${status}`);
      box.group.setAttribute("data-status", status);
      box.title.textContent = `${box.label}: ${status}`;
    },
    select(id) {
      for (const [name, box] of boxes) box.group.classList.toggle("selected", name === id);
    },
  };
}
