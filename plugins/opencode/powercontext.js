// PowerContext for OpenCode: a plugin (plugins/README.md, "OpenCode").
//
// - chat.message (the user's message, before it is saved and sent to the model): the
//   Context Pack for the prompt, added to the message as a synthetic text part, byte for
//   byte as the server returned it; the prompt is captured as the other agents' hooks do.
//   The first message of a session (and the first after a compaction) also gets the
//   session's pack.
// - config: registers the PowerContext MCP server at $POWERCONTEXT_URL/mcp (default
//   http://127.0.0.1:8000), with the token of $POWERCONTEXT_API_TOKEN when it is set.
//
// The work is done by the same Python hook as for the other agents (scripts/, copies of
// hooks/), run with a JSON payload on stdin: one validation, one scope rule, one
// fail-open rule and one time budget (POWERCONTEXT_HOOK_TIMEOUT_MS, 1.5 s by default)
// for every agent. Whatever goes wrong, the message goes on unchanged.

import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPTS = path.join(path.dirname(fileURLToPath(import.meta.url)), "scripts");
// The hook bounds itself (at most 4 s by its own budget); this only guards against a
// process that never ends, such as a python3 that does not start.
const KILL_AFTER_MS = 5000;

// The hook's own bounds on its budget (hooks/powercontext_hook.py).
const DEFAULT_BUDGET_MS = 1500;
const MIN_BUDGET_MS = 100;
const MAX_BUDGET_MS = 4000;

function hookBudgetMs() {
  const raw = (process.env.POWERCONTEXT_HOOK_TIMEOUT_MS || "").trim();
  const asked = /^\d+$/.test(raw) ? Number(raw) : DEFAULT_BUDGET_MS;
  return Math.min(Math.max(asked, MIN_BUDGET_MS), MAX_BUDGET_MS);
}

function runHook(script, payload, budgetMs) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn("python3", ["-S", path.join(SCRIPTS, script)], {
        stdio: ["pipe", "pipe", "ignore"],
        env: { ...process.env, POWERCONTEXT_HOOK_TIMEOUT_MS: String(Math.round(budgetMs)) },
      });
    } catch {
      resolve(null);
      return;
    }
    const chunks = [];
    const timer = setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS);
    child.stdout.on("data", (chunk) => chunks.push(chunk));
    child.on("error", () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        const out = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        const content = out?.hookSpecificOutput?.additionalContext;
        resolve(typeof content === "string" && content ? content : null);
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

export const PowerContext = async ({ directory }) => {
  // Sessions that have their session pack in this process; a compaction forgets it.
  const started = new Set();
  return {
    config: async (config) => {
      const base = (process.env.POWERCONTEXT_URL || "").trim() || "http://127.0.0.1:8000";
      const token = (process.env.POWERCONTEXT_API_TOKEN || "").trim();
      config.mcp = config.mcp || {};
      if (!config.mcp.powercontext) {
        config.mcp.powercontext = {
          type: "remote",
          url: base.replace(/\/+$/, "") + "/mcp",
          enabled: true,
          ...(token ? { headers: { Authorization: "Bearer " + token } } : {}),
        };
      }
    },
    event: async ({ event }) => {
      if (event?.type === "session.compacted") started.delete(event.properties?.sessionID);
    },
    "chat.message": async (input, output) => {
      try {
        const parts = output?.parts;
        if (!Array.isArray(parts)) return;
        const typed = parts.filter((p) => p && p.type === "text" && !p.synthetic);
        const prompt = typed.map((p) => p.text).join("\n");
        const sessionID = input?.sessionID;
        const last = parts[parts.length - 1];
        if (!prompt.trim() || !last || typeof last.id !== "string") return;
        const base = {
          cwd: directory,
          ...(typeof sessionID === "string" ? { session_id: sessionID } : {}),
        };
        const first = typeof sessionID === "string" && !started.has(sessionID);
        if (first) started.add(sessionID);
        // The session's pack first, as at any other agent's session start: the prompt's
        // capture below changes what the session's pack holds (its recent subjects). The
        // two share one budget, so a session's first message waits no longer than any
        // other: the session's call at most half of it, the prompt's what is left.
        const budget = hookBudgetMs();
        const begun = Date.now();
        const session = first
          ? await runHook(
              "opencode_session_start.py",
              { ...base, hook_event_name: "SessionStart" },
              Math.max(MIN_BUDGET_MS, budget / 2),
            )
          : null;
        const pack = await runHook(
          "opencode_user_prompt_submit.py",
          {
            ...base,
            hook_event_name: "UserPromptSubmit",
            prompt,
            ...(output.message?.id ? { prompt_id: output.message.id } : {}),
          },
          Math.max(MIN_BUDGET_MS, budget - (Date.now() - begun)),
        );
        // Part ids sort in creation order: these follow the prompt's parts.
        const add = (suffix, text) =>
          parts.push({
            id: last.id + suffix,
            sessionID: last.sessionID,
            messageID: last.messageID,
            type: "text",
            text,
            synthetic: true,
          });
        if (session) add("_powercontext_a", session);
        if (pack) add("_powercontext_b", pack);
      } catch {
        // Fail open: the message goes on as the user wrote it.
      }
    },
  };
};
