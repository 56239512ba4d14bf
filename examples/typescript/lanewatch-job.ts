// lanewatch-job.ts: run one LLM job on the lane lanewatch picks, with the
// official openai SDK, streaming; abandon a free attempt that has no first
// token by the cut-over time, book it through the ledger and follow its
// answer (retry the free lane, cut over to the lane it names, or stop).
//
//   node lanewatch-job.js --api http://127.0.0.1:9465 --class interactive \
//     --prompt "Say hi" [--timeout 20]
//
// --timeout is the first-token wait when the API gives no cutover_after_s.
// The key of a lane is read from the variable its api_key_env names; the
// API never sends a key. Prints one line of JSON on stdout:
// {"lane", "text", "attempts", "actions"}. Exit 0 done, 1 the ledger said
// stop or an error, 3 no lane fits the class this hour.
import OpenAI from "openai";

interface Lane {
  lane: string;
  kind: string;
  api: string;
  base_url: string;
  model: string;
  api_key_env: string;
}

interface Choice extends Lane {
  hour: string;
  class: string;
  cutover_after_s: number | null;
  fallback: Lane | null;
}

interface Attempt {
  queue_s: number;
  gen_s: number;
  emitted_tokens: number;
  shipped: boolean;
}

interface Answer {
  action: "retry_free" | "cut_over" | "stop";
  why: string;
  lane: string | null; // the lane the action runs on
  endpoint: Lane | null; // its endpoint (the key's variable, never a key)
}

function flag(name: string, def?: string): string {
  const i = process.argv.indexOf("--" + name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (def === undefined) throw new Error(`--${name} is required`);
  return def;
}

// api calls the lanewatch API and returns its JSON, or throws its error.
async function api<T>(base: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw Object.assign(new Error(`lanewatch ${path}: ${json.error}`), { code: json.code });
  return json as T;
}

// attempt streams one completion on lane; it aborts when no first token
// has come within firstTokenS seconds.
async function attempt(lane: Lane, prompt: string, firstTokenS: number): Promise<{ a: Attempt; text: string }> {
  if (lane.api !== "openai") throw new Error(`lane ${lane.lane} speaks ${lane.api}; this example speaks openai only`);
  const client = new OpenAI({
    baseURL: lane.base_url,
    apiKey: (lane.api_key_env && process.env[lane.api_key_env]) || "none",
    maxRetries: 0, // the ledger decides about retries
  });
  const ac = new AbortController();
  const start = performance.now();
  let first = 0;
  let tokens = 0;
  let text = "";
  const timer = setTimeout(() => ac.abort(), firstTokenS * 1000);
  try {
    const stream = await client.chat.completions.create(
      { model: lane.model, messages: [{ role: "user", content: prompt }], stream: true },
      { signal: ac.signal },
    );
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta?.content;
      if (!piece) continue;
      if (!first) {
        first = performance.now();
        clearTimeout(timer); // the first token came: let it finish
      }
      tokens++;
      text += piece;
    }
    // The SDK ends the iteration quietly when the signal aborts it.
    if (ac.signal.aborted) throw new Error("aborted");
    const end = performance.now();
    return { a: { queue_s: ((first || end) - start) / 1000, gen_s: first ? (end - first) / 1000 : 0, emitted_tokens: tokens, shipped: true }, text };
  } catch (err) {
    const end = performance.now();
    const why = ac.signal.aborted ? `no first token after ${firstTokenS} s: abandoned` : String(err);
    process.stderr.write(`attempt on ${lane.lane}: ${why}\n`);
    return {
      a: { queue_s: ((first || end) - start) / 1000, gen_s: first ? (end - first) / 1000 : 0, emitted_tokens: tokens, shipped: false },
      text: "",
    };
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<number> {
  const base = flag("api");
  const cls = flag("class");
  const prompt = flag("prompt", "Say hi");
  const timeoutS = Number(flag("timeout", "20"));
  let choice: Choice;
  try {
    choice = await api<Choice>(base, `/api/v1/lane?class=${encodeURIComponent(cls)}`);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return (err as { code?: string }).code === "no_lane" ? 3 : 1;
  }
  const wait = choice.cutover_after_s ?? timeoutS;
  let lane: Lane = choice;
  const attempts: Attempt[] = [];
  const actions: string[] = [];
  for (;;) {
    const { a, text } = await attempt(lane, prompt, wait);
    attempts.push(a);
    if (a.shipped) {
      process.stdout.write(JSON.stringify({ lane: lane.lane, text, attempts: attempts.length, actions }) + "\n");
      return 0;
    }
    // Book the partial attempt with the hour's policy, then follow the answer.
    const ans = await api<Answer>(base, `/api/v1/book?class=${encodeURIComponent(cls)}&hour=${choice.hour}`, { attempts });
    actions.push(ans.action);
    process.stderr.write(`ledger: ${ans.action}: ${ans.why}\n`);
    if (ans.action === "stop") return 1;
    // The answer names the lane to run the next attempt on, with its endpoint.
    if (!ans.endpoint) {
      process.stderr.write(`ledger said ${ans.action} but named no lane\n`);
      return 1;
    }
    lane = ans.endpoint;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`lanewatch-job: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
