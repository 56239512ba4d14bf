// lanewatch-job.ts: run one LLM job on the lane lanewatch picks, streaming
// with the official SDK of the lane's dialect (openai or
// @anthropic-ai/sdk). A free attempt with no first token by the cut-over
// time is cancelled and the ledger's running answer followed (cut over to
// the lane it names); any other failed attempt is booked and the answer
// followed (retry the free lane, cut over, or stop). ../README.md has the
// commands:
//
//   npm ci
//   npm start --silent -- --api http://127.0.0.1:9465 --class interactive \
//     [--prompt "Say hi"] [--timeout 20]
//
// --timeout is the first-token wait of an attempt no cutover_after_s
// covers.
// The key of a lane is read from the variable its api_key_env names; the
// API never sends a key. Prints one line of JSON on stdout:
// {"lane", "text", "attempts", "actions"}. Exit 0 done, 1 the ledger said
// stop or an error, 3 no lane fits the class this hour.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

// MAX_TOKENS is the reply's limit on an anthropic lane, where the
// Messages API requires one.
const MAX_TOKENS = 1024;

interface Lane {
  lane: string;
  kind: string;
  api: string; // "openai" or "anthropic"
  base_url: string;
  model: string;
  api_key_env: string; // "" for a lane without a key
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
  error: boolean; // it ended in an error: the ledger then answers no retry_free
}

interface Answer {
  action: "retry_free" | "cut_over" | "stop" | "wait";
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
  let res: Response;
  try {
    res = await fetch(base + path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    // fetch says "fetch failed"; its cause says why (ECONNREFUSED...).
    const cause = (err as { cause?: Error }).cause;
    throw new Error(`lanewatch ${base}${path}: ${(cause ?? (err as Error)).message}`);
  }
  const json = await res.json();
  if (!res.ok) throw Object.assign(new Error(`lanewatch ${path}: ${json.error}`), { code: json.code });
  return json as T;
}

// key returns the lane's key from the variable its api_key_env names
// ("none" for a lane without a key: the SDKs want one).
function key(lane: Lane): string {
  if (!lane.api_key_env) return "none";
  const k = process.env[lane.api_key_env];
  if (!k) throw new Error(`lane ${lane.lane}: environment variable ${lane.api_key_env} is not set or empty`);
  return k;
}

// reply streams one reply on lane in its dialect and yields its text as it
// comes. The SDKs end the iteration quietly or throw when signal aborts it.
async function* reply(lane: Lane, apiKey: string, prompt: string, signal: AbortSignal): AsyncGenerator<string> {
  const messages = [{ role: "user" as const, content: prompt }];
  switch (lane.api) {
    case "openai": {
      // The SDK posts to {baseURL}/chat/completions.
      const client = new OpenAI({ baseURL: lane.base_url, apiKey, maxRetries: 0 }); // the ledger decides about retries
      const stream = await client.chat.completions.create({ model: lane.model, messages, stream: true }, { signal });
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta?.content;
        if (piece) yield piece;
      }
      return;
    }
    case "anthropic": {
      // The SDK posts to {baseURL}/v1/messages (anthropic-version
      // 2023-06-01, the key as x-api-key); a lane's base_url may end in /v1
      // already (docs/config.md).
      const baseURL = lane.base_url.replace(/\/v1\/?$/, "");
      const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
      const stream = await client.messages.create(
        { model: lane.model, max_tokens: MAX_TOKENS, messages, stream: true },
        { signal },
      );
      for await (const event of stream) {
        if (event.type === "content_block_delta" && event.delta.type === "text_delta") yield event.delta.text;
      }
      return;
    }
    default:
      throw new Error(`lane ${lane.lane} speaks ${lane.api}; this example speaks openai and anthropic`);
  }
}

// describe says why an attempt failed. An SDK's error message may quote
// the lane's answer, and a lane refusing a key may quote the key: for an
// answer of the lane, its status alone.
function describe(err: unknown): string {
  if ((err instanceof OpenAI.APIError || err instanceof Anthropic.APIError) && err.status) {
    return `http ${err.status} from the lane`;
  }
  return String(err);
}

// attempt streams one reply on lane; it aborts when no first token has come
// within firstTokenS seconds. errored: it failed with an error (the lane
// refused, answered an error or broke off), not by lateness.
async function attempt(
  lane: Lane,
  prompt: string,
  firstTokenS: number,
): Promise<{ a: Attempt; text: string; errored: boolean }> {
  const apiKey = key(lane);
  const ac = new AbortController();
  const start = performance.now();
  let first = 0;
  let tokens = 0;
  let text = "";
  let why = "";
  const timer = setTimeout(() => ac.abort(), firstTokenS * 1000);
  try {
    for await (const piece of reply(lane, apiKey, prompt, ac.signal)) {
      if (!first) {
        first = performance.now();
        clearTimeout(timer); // the first token came: let it finish
      }
      tokens++;
      text += piece;
    }
  } catch (err) {
    why = describe(err);
  } finally {
    clearTimeout(timer);
  }
  const errored = !!why && !ac.signal.aborted;
  if (ac.signal.aborted) why = `no first token after ${+firstTokenS.toFixed(2)} s: abandoned`;
  const end = performance.now();
  const a = {
    queue_s: ((first || end) - start) / 1000,
    gen_s: first ? (end - first) / 1000 : 0,
    emitted_tokens: tokens,
    shipped: !why,
    error: errored,
  };
  if (why) process.stderr.write(`attempt on ${lane.lane}: ${why}\n`);
  return { a, text: why ? "" : text, errored };
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
  // The cut-over time counts from the job's start, on the lane the API
  // chose (the book's free lane); other attempts wait --timeout.
  const cut = choice.cutover_after_s;
  let lane: Lane = choice;
  const attempts: Attempt[] = [];
  const actions: string[] = [];
  const errored = new Set<string>(); // lanes whose attempt failed with an error
  for (;;) {
    const spent = attempts.reduce((sum, a) => sum + a.queue_s + a.gen_s, 0);
    const cutHere = cut !== null && lane.lane === choice.lane;
    const { a, text, errored: failed } = await attempt(lane, prompt, cutHere ? Math.max(0, cut - spent) : timeoutS);
    const before = attempts.slice();
    attempts.push(a);
    if (a.shipped) {
      process.stdout.write(JSON.stringify({ lane: lane.lane, text, attempts: attempts.length, actions }) + "\n");
      return 0;
    }
    if (failed) errored.add(lane.lane);
    // No first token by the cut-over time: the ledger's question for a
    // running attempt (running_s), whose answer is a cut-over, never a retry
    // of the lane just cancelled (docs/ledger.md). Any other failed
    // attempt: book it. Both with the hour's policy; then follow the answer.
    const body = cutHere && !failed ? { attempts: before, running_s: a.queue_s } : { attempts };
    const ans = await api<Answer>(base, `/api/v1/book?class=${encodeURIComponent(cls)}&hour=${choice.hour}`, body);
    actions.push(ans.action);
    process.stderr.write(`ledger: ${ans.action}: ${ans.why}\n`);
    if (ans.action === "stop") return 1;
    // The answer names the lane to run the next attempt on, with its endpoint.
    if (!ans.endpoint) {
      process.stderr.write(`ledger said ${ans.action} but named no lane\n`);
      return 1;
    }
    lane = ans.endpoint;
    // An attempt that ended in an error is sent with error: true, and the
    // ledger answers no retry_free after it; a paid lane that failed at
    // once (a refused key, a lane down) costs no time, and its cut_over
    // would come again and again. A lane is not tried twice after an error.
    if (errored.has(lane.lane)) {
      process.stderr.write(`lane ${lane.lane} failed with an error before: not trying it again\n`);
      return 1;
    }
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`lanewatch-job: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
