// active-memory for pi: appends lesson cards recalled for a tool call to that tool's result.
//
// Load it with `pi -e <path>` (contained mode) or from .pi/extensions. The broker is found in
// ACTIVE_MEMORY_BROKER + ACTIVE_MEMORY_TOKEN (set by the host for this run), else in the ticket
// named by ACTIVE_MEMORY_TICKET or written into DEFAULT_TICKET by `active-memory hooks install`.
//
// The handler never throws and gives up after 250 ms: a throwing tool_result handler would
// block the tool, and recall is only ever a hint. Plain JavaScript syntax on purpose, so the
// same file also runs under node without a TypeScript step.
//
// With `hooks install --harness pi --learn`, LEARN_COMMAND holds the session-end hook's command
// line (a JSON array): when pi leaves a session (quit, or /new, /resume, /fork), the extension
// starts it detached with the session file on its stdin, as Claude Code's SessionEnd does, and
// never waits for it.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const DEFAULT_TICKET = "__ACTIVE_MEMORY_TICKET__";
const LEARN_COMMAND = "__ACTIVE_MEMORY_LEARN__";
// "reload" reloads the extensions and keeps the session: it has not ended.
const SESSION_ENDS = new Set(["quit", "new", "resume", "fork"]);
const TIMEOUT_MS = 250;
const MAX_ANSWER_CHARS = 32 * 1024;

function unquote(value) {
  const text = value.trim();
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    return text.slice(1, -1).replace(/\\(["\\])/g, "$1");
  }
  return text;
}

function fromTicket(path) {
  const headers = {};
  let url = "";
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const split = line.indexOf("=");
    if (split < 0 || line.trimStart().startsWith("#")) continue;
    const name = line.slice(0, split).trim();
    const value = unquote(line.slice(split + 1));
    if (name === "url") url = value;
    if (name === "header") {
      const colon = value.indexOf(":");
      if (colon > 0) headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
    }
  }
  return url && headers.Authorization ? { url, headers } : undefined;
}

function broker() {
  const env = process.env;
  if (env.ACTIVE_MEMORY_BROKER && env.ACTIVE_MEMORY_TOKEN) {
    const headers = { Authorization: `Bearer ${env.ACTIVE_MEMORY_TOKEN}` };
    const ids = {
      Node: env.ACTIVE_MEMORY_NODE,
      Conversation: env.ACTIVE_MEMORY_CONVERSATION,
      Execution: env.ACTIVE_MEMORY_EXECUTION,
    };
    for (const [name, value] of Object.entries(ids)) {
      if (value) headers[`X-Active-Memory-${name}`] = encodeURIComponent(value);
    }
    return { url: `http://${env.ACTIVE_MEMORY_BROKER}/hook`, headers };
  }
  const installed = DEFAULT_TICKET.startsWith("__") ? "" : DEFAULT_TICKET;
  const ticket = env.ACTIVE_MEMORY_TICKET || installed;
  return ticket ? fromTicket(ticket) : undefined;
}

function sessionId(ctx) {
  const manager = ctx && ctx.sessionManager;
  for (const getter of ["getSessionId", "getSessionFile"]) {
    if (manager && typeof manager[getter] === "function") {
      const value = manager[getter]();
      if (typeof value === "string" && value) return value;
    }
  }
  return undefined;
}

async function recall(event, ctx) {
  const target = broker();
  if (!target || !event || typeof event.toolName !== "string") return undefined;
  const body = JSON.stringify({
    tool: event.toolName,
    input: event.input && typeof event.input === "object" ? event.input : {},
    cwd: (ctx && typeof ctx.cwd === "string" && ctx.cwd) || process.cwd(),
    sessionId: sessionId(ctx),
  });
  const response = await fetch(target.url, {
    method: "POST",
    headers: {
      ...target.headers,
      "Content-Type": "application/json",
      "X-Active-Memory-Harness": "pi",
    },
    body,
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok) return undefined;
  const answer = JSON.parse((await response.text()).slice(0, MAX_ANSWER_CHARS));
  const text = answer && typeof answer.additionalContext === "string" ? answer.additionalContext : "";
  if (!text) return undefined;
  const content = Array.isArray(event.content) ? event.content : [];
  return { content: [...content, { type: "text", text }] };
}

function queueSession(event, ctx) {
  if (LEARN_COMMAND.startsWith("__") || !event || !SESSION_ENDS.has(event.reason)) return;
  const argv = JSON.parse(LEARN_COMMAND);
  const manager = ctx && ctx.sessionManager;
  const file = manager && typeof manager.getSessionFile === "function" && manager.getSessionFile();
  if (!Array.isArray(argv) || !argv.length || typeof file !== "string" || !file) return;
  const cwd = (ctx && typeof ctx.cwd === "string" && ctx.cwd) || process.cwd();
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "ignore", "ignore"], detached: true });
  child.on("error", () => {});
  child.stdin.on("error", () => {});
  child.stdin.end(JSON.stringify({ session_file: file, cwd, reason: event.reason }));
  child.unref();
}

export default function activeMemory(pi) {
  try {
    pi.on("tool_result", async (event, ctx) => {
      try {
        return await recall(event, ctx);
      } catch {
        return undefined;
      }
    });
    pi.on("session_shutdown", async (event, ctx) => {
      try {
        queueSession(event, ctx);
      } catch {
        // Learning never holds up or fails pi's shutdown.
      }
    });
  } catch {
    // An extension that cannot register must not stop pi from starting.
  }
}
