// Checks recorded flowcore UI message streams with the `ai` package's own code.
//
//   node check.mjs DIR        (DIR holds <name>.sse files written by tests/port/ui_streams.py)
//
// For each stream: the bytes are fed in small pieces through the SDK's
// parseJsonEventStream with its uiMessageChunkSchema (what useChat's
// transport does with a response body), every chunk sent must parse, the
// stream must end with `data: [DONE]`, and readUIMessageStream must build
// the assistant message without a processing error. It prints one line per
// stream ("N / M chunks parsed") and writes <name>.message.json (the figures
// and the final message) next to the stream for the Python test to read.
// Exit status 1 if any stream has an invalid chunk or fails to assemble.

import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const PIECE = 17; // bytes per network read: small and odd, so chunks split mid-line

function byteStream(bytes) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.subarray(at, at + PIECE));
      at += PIECE;
    },
  });
}

function listStream(items) {
  return new ReadableStream({
    start(controller) {
      for (const item of items) controller.enqueue(item);
      controller.close();
    },
  });
}

// The data lines of each SSE event, counted independently of the SDK.
function sentChunks(text) {
  const events = text.split(/\r\n\r\n|\n\n|\r\r/);
  const data = [];
  for (const event of events) {
    const lines = event.split(/\r\n|\n|\r/).filter((l) => l.startsWith("data:"));
    if (lines.length) data.push(lines.map((l) => l.slice(5).replace(/^ /, "")).join("\n"));
  }
  return data.filter((d) => d !== "[DONE]");
}

async function check(file) {
  const name = path.basename(file, ".sse");
  const bytes = await readFile(file);
  const text = bytes.toString("utf8");
  const sent = sentChunks(text).length;
  const results = [];
  for await (const result of parseJsonEventStream({ stream: byteStream(bytes), schema: uiMessageChunkSchema })) {
    results.push(result);
  }
  const chunks = results.filter((r) => r.success).map((r) => r.value);
  const invalid = results
    .filter((r) => !r.success)
    .map((r) => ({
      chunk: JSON.stringify(r.rawValue)?.slice(0, 200),
      error: String(r.error?.message ?? r.error).split("\n")[0].slice(0, 200),
    }));
  const errorTexts = new Set(chunks.filter((c) => c.type === "error").map((c) => c.errorText));
  const streamErrors = [];
  const processingErrors = [];
  let message;
  for await (const snapshot of readUIMessageStream({
    stream: listStream(chunks),
    onError: (error) => {
      const text = String(error?.message ?? error);
      (errorTexts.has(text) ? streamErrors : processingErrors).push(text);
    },
  })) {
    message = snapshot;
  }
  const report = {
    name,
    sent,
    parsed: chunks.length,
    invalid,
    endsWithDone: text.endsWith("data: [DONE]\n\n"),
    finishChunks: chunks.filter((c) => c.type === "finish").length,
    chunkTypes: chunks.map((c) => c.type),
    streamErrors,
    processingErrors,
    message,
  };
  await writeFile(path.join(path.dirname(file), `${name}.message.json`), JSON.stringify(report, null, 2));
  return report;
}

function partSummary(message) {
  const counts = new Map();
  for (const part of message?.parts ?? []) counts.set(part.type, (counts.get(part.type) ?? 0) + 1);
  return [...counts].map(([type, n]) => (n > 1 ? `${type} x${n}` : type)).join(", ");
}

async function main() {
  const dir = process.argv[2];
  if (!dir) {
    console.error("usage: node check.mjs DIR (a folder of .sse files)");
    return 2;
  }
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sse")).sort();
  if (files.length === 0) {
    console.error(`no .sse files in ${dir}: record them first (tests/port/ui_streams.py)`);
    return 2;
  }
  let failed = 0;
  for (const file of files) {
    const r = await check(path.join(dir, file));
    const ok =
      r.invalid.length === 0 &&
      r.parsed === r.sent &&
      r.endsWithDone &&
      r.finishChunks === 1 &&
      r.processingErrors.length === 0;
    if (!ok) failed += 1;
    console.log(
      `${r.name}: ${r.parsed} / ${r.sent} chunks parsed${ok ? "" : "  INVALID"}; ` +
        `message parts: ${partSummary(r.message)}` +
        (r.streamErrors.length ? `; error chunks: ${r.streamErrors.length}` : ""),
    );
    for (const bad of r.invalid.slice(0, 3)) console.log(`  invalid chunk ${bad.chunk}\n    ${bad.error}`);
    if (r.invalid.length > 3) console.log(`  ... and ${r.invalid.length - 3} more invalid chunks`);
    for (const err of r.processingErrors) console.log(`  readUIMessageStream: ${err}`);
    if (!r.endsWithDone) console.log("  the stream does not end with data: [DONE]");
    if (r.finishChunks !== 1) console.log(`  ${r.finishChunks} finish chunks (expected 1)`);
  }
  console.log(`${files.length - failed} of ${files.length} streams valid (ai ${await aiVersion()})`);
  return failed ? 1 : 0;
}

async function aiVersion() {
  const url = new URL("./node_modules/ai/package.json", import.meta.url);
  return JSON.parse(await readFile(url, "utf8")).version;
}

process.exitCode = await main();
