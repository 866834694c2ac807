// The JSON API and the run event stream, with the API key from sessionStorage.
// The key goes only into the Authorization header: never into a URL or the console.

const KEY = "flowcore.viewer.apiKey";

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(value) {
  sessionStorage.setItem(KEY, value);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

/** An error answer of the API: its HTTP status and the server's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Called when the server says the key is not (or no longer) valid.
let onUnauthorized = () => {};
export function whenUnauthorized(callback) {
  onUnauthorized = callback;
}

function headers(accept, withBody) {
  const out = { Authorization: `Bearer ${getKey() || ""}`, Accept: accept };
  if (withBody) out["Content-Type"] = "application/json";
  return out;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === "string") message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  if (response.status === 401) onUnauthorized(message);
  return new ApiError(response.status, message);
}

/** Call a JSON route: api("/api/runs"), api("/api/runs", {method: "POST", body: {...}}). */
export async function api(path, { method = "GET", body } = {}) {
  const response = await fetch(path, {
    method,
    headers: headers("application/json", body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

// One SSE message block ("event: x\nid: 1\ndata: {...}") to the event's JSON, or null.
function parseBlock(block) {
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // a keepalive comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
  }
  if (data.length === 0) return null;
  try {
    return JSON.parse(data.join("\n"));
  } catch {
    return null;
  }
}

/**
 * Read a Server-Sent Events route with fetch (EventSource cannot send the
 * Authorization header), calling onEvent(event) for each one, until the stream
 * ends or signal aborts.
 */
export async function streamEvents(path, onEvent, signal) {
  const response = await fetch(path, {
    headers: headers("text/event-stream", false),
    cache: "no-store",
    signal,
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let cut = buffer.indexOf("\n\n");
    while (cut >= 0) {
      const event = parseBlock(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (event) onEvent(event);
      cut = buffer.indexOf("\n\n");
    }
  }
  const last = parseBlock(buffer);
  if (last) onEvent(last);
}
