// Small DOM helpers. Every value is inserted as text (textContent, text nodes):
// run outputs were written by a model and are never parsed as markup here.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(node, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else node.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: el("p", {class: "x", text: "hello"}) or el("ul", {}, item1, item2). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  apply(node, props);
  append(node, children);
  return node;
}

/** An SVG element, same calling convention as el(). */
export function svg(tag, props = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  apply(node, props);
  append(node, children);
  return node;
}

/** Remove every child of node. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** A value as indented JSON text (for <pre>), or "—" when there is none. */
export function pretty(value) {
  if (value === undefined || value === null) return "—";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** Epoch seconds as a local date and time. */
export function when(seconds) {
  if (typeof seconds !== "number") return "—";
  return new Date(seconds * 1000).toLocaleString();
}

/** A number of tokens, "12 in / 5 out". */
export function tokens(input, output) {
  return `${input || 0} in / ${output || 0} out`;
}
