#!/usr/bin/env python3
"""lanewatch_job.py: run one LLM job on the lane lanewatch picks, on the
standard library only (urllib, http.client, json, threading).

    python3 lanewatch_job.py --api http://127.0.0.1:9465 --class interactive \
        --prompt "Say hi" [--timeout 20]

It streams an OpenAI chat completion, abandons an attempt that has no first
token by the cut-over time (cutover_after_s from the API, else --timeout),
books it through POST /api/v1/book and follows the ledger: retry_free,
cut_over to the lane its answer names (with the endpoint), or stop. The key of a lane is read from the
variable its api_key_env names; the API never sends a key. Prints one line
of JSON on stdout: {"lane", "text", "attempts", "actions"}. Exit 0 done,
1 the ledger said stop or an error, 3 no lane fits the class this hour.
"""

import argparse
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


class APIError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def api(base, path, body=None):
    """Calls the lanewatch API; raises APIError with its error and code."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        err = json.load(e)
        raise APIError("lanewatch %s: %s" % (path, err["error"]), err["code"]) from None


def attempt(lane, prompt, first_token_s):
    """Streams one completion on lane; abandons it when no first token has
    come within first_token_s seconds. Returns (attempt, text)."""
    if lane["api"] != "openai":
        raise RuntimeError("lane %s speaks %s; this example speaks openai only" % (lane["lane"], lane["api"]))
    url = urllib.parse.urlsplit(lane["base_url"].rstrip("/") + "/chat/completions")
    conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(url.netloc, timeout=300)
    key = os.environ.get(lane["api_key_env"], "") if lane["api_key_env"] else ""
    body = json.dumps({"model": lane["model"], "stream": True, "messages": [{"role": "user", "content": prompt}]})
    state = {"first": None, "tokens": 0, "text": "", "done": False, "err": None}
    first_token = threading.Event()

    def read():
        try:
            conn.request("POST", url.path, body=body, headers={
                "content-type": "application/json", "authorization": "Bearer " + (key or "none")})
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError("http %d from %s" % (resp.status, lane["base_url"]))
            for raw in resp:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue  # ": queued" comments, blank lines
                data = line[5:].strip()
                if data == "[DONE]":
                    state["done"] = True
                    break
                event = json.loads(data)
                if "error" in event:
                    raise RuntimeError("stream error: %s" % event["error"].get("message"))
                for choice in event.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        if state["first"] is None:
                            state["first"] = time.monotonic()
                            first_token.set()
                        state["tokens"] += 1
                        state["text"] += piece
        except Exception as e:  # an abandoned attempt ends here too
            state["err"] = e
        finally:
            first_token.set()

    start = time.monotonic()
    conn.connect()
    sock = conn.sock
    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    # Set by the first token, or by the end of the stream whatever it was.
    abandoned = not first_token.wait(first_token_s)
    if abandoned:
        sock.shutdown(socket.SHUT_RDWR)  # cancel: the worker's read returns
    worker.join()
    conn.close()
    end = time.monotonic()
    first = state["first"]
    shipped = state["done"] and not abandoned
    if not shipped:
        why = "no first token after %g s: abandoned" % first_token_s if abandoned else str(state["err"])
        print("attempt on %s: %s" % (lane["lane"], why), file=sys.stderr)
    return {
        "queue_s": (first or end) - start,
        "gen_s": end - first if first else 0,
        "emitted_tokens": state["tokens"],
        "shipped": shipped,
    }, state["text"] if shipped else ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", required=True)
    p.add_argument("--class", dest="cls", required=True)
    p.add_argument("--prompt", default="Say hi")
    p.add_argument("--timeout", type=float, default=20, help="first-token wait when the API gives no cutover_after_s")
    args = p.parse_args()
    q = urllib.parse.quote(args.cls)
    try:
        choice = api(args.api, "/api/v1/lane?class=" + q)
    except APIError as e:
        print(e, file=sys.stderr)
        return 3 if e.code == "no_lane" else 1
    wait = choice["cutover_after_s"] if choice["cutover_after_s"] is not None else args.timeout
    lane, attempts, actions = choice, [], []
    while True:
        a, text = attempt(lane, args.prompt, wait)
        attempts.append(a)
        if a["shipped"]:
            print(json.dumps({"lane": lane["lane"], "text": text, "attempts": len(attempts), "actions": actions}))
            return 0
        # Book the partial attempt with the hour's policy, then follow the answer.
        ans = api(args.api, "/api/v1/book?class=%s&hour=%s" % (q, choice["hour"]), {"attempts": attempts})
        actions.append(ans["action"])
        print("ledger: %s: %s" % (ans["action"], ans["why"]), file=sys.stderr)
        if ans["action"] == "stop":
            return 1
        # The answer names the lane to run the next attempt on, with its endpoint.
        if ans["endpoint"] is None:
            print("ledger said %s but named no lane" % ans["action"], file=sys.stderr)
            return 1
        lane = ans["endpoint"]


if __name__ == "__main__":
    sys.exit(main())
