// The block registry: every block, or the best matches of a search.

import { api } from "./api.js";
import { clear, el } from "./dom.js";

function card(block) {
  const tags = (block.tags || []).join(", ");
  return el("li", { class: "block", "data-block": block.id },
    el("h3", {}, el("code", { text: block.id }), " ", el("span", { class: "muted", text: `v${block.version} · ${block.kind}${block.category ? " · " + block.category : ""}` })),
    el("p", { class: "block-name", text: block.name }),
    el("p", { text: block.description }),
    block.use_when ? el("p", { class: "muted", text: `Use when: ${block.use_when}` }) : null,
    tags ? el("p", { class: "muted", text: `Tags: ${tags}` }) : null);
}

/** Show the block registry in main; returns a function to call when leaving. */
export function showBlocks(main) {
  const query = el("input", { type: "search", id: "block-query", placeholder: "Search blocks", "aria-label": "Search blocks" });
  const button = el("button", { type: "submit", id: "block-search", text: "Search" });
  const status = el("p", { id: "blocks-status", class: "hint" });
  const problem = el("p", { id: "blocks-error", class: "error", role: "alert" });
  const list = el("ul", { id: "blocks", class: "blocks" });
  const form = el("form", { id: "block-form", class: "row" }, query, button);
  clear(main).append(el("section", { class: "blocks-page" }, el("h2", { text: "Block registry" }), form, status, problem, list));
  let generation = 0;

  async function load(text) {
    const mine = ++generation; // answers to older searches are dropped
    problem.textContent = "";
    try {
      const found = text
        ? await api("/api/blocks/search", { method: "POST", body: { query: text, limit: 50 } })
        : await api("/api/blocks?limit=500");
      if (mine !== generation) return;
      clear(list).append(...found.blocks.map(card));
      status.textContent = text
        ? `${found.blocks.length} block(s) match "${text}"`
        : `${found.blocks.length} block(s)`;
      list.setAttribute("data-query", text);
    } catch (error) {
      if (mine === generation) problem.textContent = error.message;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load(query.value.trim());
  });
  load("");
  return () => {
    generation += 1;
  };
}
