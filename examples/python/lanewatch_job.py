#!/usr/bin/env python3
"""lanewatch_job.py: run one LLM job on the lane lanewatch picks, on the
standard library only (urllib, http.client, json, threading). ../README.md
has the commands:

    python3 examples/python/lanewatch_job.py --api http://127.0.0.1:9465 \
        --class interactive [--prompt "Say hi"] [--timeout 20]

It streams the reply in the lane's dialect (openai chat completions or
anthropic Messages). A free attempt with no first token by the cut-over
time (cutover_after_s from the API, seconds since the job started) is
cancelled and the ledger asked about it as running (POST /api/v1/book with
running_s), which cuts over to the lane its answer names; any other failed
attempt (no first token by --timeout, an error) is booked and the answer
followed: retry_free, cut_over, or stop (one that ended in an error is
booked with "error": true: no retry_free then). The key of a lane is read from the variable its api_key_env names; the API never sends a key.
Prints one line of JSON on stdout: {"lane", "text", "attempts", "actions"}.
Exit 0 done, 1 the ledger said stop or an error, 3 no lane fits the class
this hour.
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


# The reply's limit on an anthropic lane, where the Messages API requires one.
MAX_TOKENS = 1024
ANTHROPIC_VERSION = "2023-06-01"


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
    except urllib.error.URLError as e:  # refused, unreachable
        raise APIError("lanewatch %s%s: %s" % (base, path, e.reason), "unreachable") from None


def request(lane, key, prompt):
    """The path, headers and body of one streamed reply on lane, in its
    dialect: openai POSTs {base_url}/chat/completions with the key as a
    bearer token; anthropic POSTs {base_url}/v1/messages (/messages when
    base_url ends in /v1, as docs/config.md says) with the key as x-api-key
    and anthropic-version 2023-06-01."""
    path = urllib.parse.urlsplit(lane["base_url"]).path.rstrip("/")
    messages = [{"role": "user", "content": prompt}]
    if lane["api"] == "openai":
        return (path + "/chat/completions", {"authorization": "Bearer " + key},
                {"model": lane["model"], "stream": True, "messages": messages})
    if lane["api"] == "anthropic":
        path += "/messages" if path.endswith("/v1") else "/v1/messages"
        return (path, {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION},
                {"model": lane["model"], "max_tokens": MAX_TOKENS, "stream": True, "messages": messages})
    raise RuntimeError("lane %s speaks %s; this example speaks openai and anthropic" % (lane["lane"], lane["api"]))


def openai_event(data):
    """The text of one chat completions stream event and whether it ends
    the stream ([DONE])."""
    if data == "[DONE]":
        return "", True
    event = json.loads(data)
    if "error" in event:
        raise RuntimeError("stream error: %s" % event["error"].get("message"))
    return "".join((c.get("delta") or {}).get("content") or "" for c in event.get("choices", [])), False


def anthropic_event(data):
    """The text of one Messages stream event and whether it ends the
    stream (message_stop). ping, message_start and the rest carry none."""
    event = json.loads(data)
    kind = event.get("type")
    if kind == "error":
        raise RuntimeError("stream error: %s" % event["error"].get("message"))
    delta = event.get("delta") or {}
    if kind == "content_block_delta" and delta.get("type") == "text_delta":
        return delta["text"], False
    return "", kind == "message_stop"


def lane_key(lane):
    """The lane's key, from the variable its api_key_env names ("none" for
    a lane without a key)."""
    if not lane["api_key_env"]:
        return "none"
    key = os.environ.get(lane["api_key_env"])
    if not key:
        raise RuntimeError("lane %s: environment variable %s is not set or empty" % (lane["lane"], lane["api_key_env"]))
    return key


def attempt(lane, prompt, first_token_s):
    """Streams one reply on lane; abandons it when no first token has come
    within first_token_s seconds. Returns (attempt, text, errored): errored
    when it failed with an error (the lane refused, answered an error or
    broke off), not by lateness."""
    path, headers, body = request(lane, lane_key(lane), prompt)
    parse = openai_event if lane["api"] == "openai" else anthropic_event
    url = urllib.parse.urlsplit(lane["base_url"])
    conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    # The connection waits no longer than the first token may (and more
    # than 0, which would make the socket non-blocking).
    conn = conn_cls(url.netloc, timeout=max(first_token_s, 0.001))
    state = {"first": None, "tokens": 0, "text": "", "done": False, "err": None}
    first_token = threading.Event()

    def read():
        try:
            conn.request("POST", path, body=json.dumps(body), headers=dict(headers, **{"content-type": "application/json"}))
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError("http %d from %s" % (resp.status, lane["base_url"]))
            for raw in resp:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue  # event: names, ": queued" comments, blank lines
                piece, state["done"] = parse(line[5:].strip())
                if piece:
                    if state["first"] is None:
                        state["first"] = time.monotonic()
                        first_token.set()
                    state["tokens"] += 1
                    state["text"] += piece
                if state["done"]:
                    break
        except Exception as e:  # an abandoned attempt ends here too
            state["err"] = e
        finally:
            first_token.set()

    start = time.monotonic()
    abandoned = False
    try:
        conn.connect()
    except socket.timeout:  # no first token in time, as below
        abandoned = True
    except OSError as e:  # refused, unreachable
        state["err"] = e
    else:
        conn.sock.settimeout(300)
        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        # Set by the first token, or by the end of the stream whatever it was.
        abandoned = not first_token.wait(max(0, first_token_s - (time.monotonic() - start)))
        if abandoned:
            conn.sock.shutdown(socket.SHUT_RDWR)  # cancel: the worker's read returns
        worker.join()
    conn.close()
    end = time.monotonic()
    first = state["first"]
    shipped = state["done"] and not abandoned
    if not shipped:
        why = "no first token after %g s: abandoned" % first_token_s if abandoned else str(state["err"] or "the stream ended early")
        print("attempt on %s: %s" % (lane["lane"], why), file=sys.stderr)
    errored = not shipped and not abandoned
    return {
        "queue_s": (first or end) - start,
        "gen_s": end - first if first else 0,
        "emitted_tokens": state["tokens"],
        "shipped": shipped,
        "error": errored,  # the ledger then answers no retry_free
    }, state["text"] if shipped else "", errored


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", required=True)
    p.add_argument("--class", dest="cls", required=True)
    p.add_argument("--prompt", default="Say hi")
    p.add_argument("--timeout", type=float, default=20, help="first-token wait of an attempt no cutover_after_s covers")
    args = p.parse_args()
    q = urllib.parse.quote(args.cls)
    try:
        choice = api(args.api, "/api/v1/lane?class=" + q)
    except APIError as e:
        print(e, file=sys.stderr)
        return 3 if e.code == "no_lane" else 1
    # The cut-over time counts from the job's start, on the lane the API
    # chose (the book's free lane); other attempts wait --timeout.
    cut = choice["cutover_after_s"]
    lane, attempts, actions = choice, [], []
    errored = set()  # lanes whose attempt failed with an error
    while True:
        spent = sum(a["queue_s"] + a["gen_s"] for a in attempts)
        cut_here = cut is not None and lane["lane"] == choice["lane"]
        a, text, failed = attempt(lane, args.prompt, max(0, cut - spent) if cut_here else args.timeout)
        before = list(attempts)
        attempts.append(a)
        if a["shipped"]:
            print(json.dumps({"lane": lane["lane"], "text": text, "attempts": len(attempts), "actions": actions}))
            return 0
        if failed:
            errored.add(lane["lane"])
        # No first token by the cut-over time: the ledger's question for a
        # running attempt (running_s), whose answer is a cut-over, never a
        # retry of the lane just cancelled (docs/ledger.md). Any other failed
        # attempt: book it. Both with the hour's policy; then follow the answer.
        body = {"attempts": before, "running_s": a["queue_s"]} if cut_here and not failed else {"attempts": attempts}
        ans = api(args.api, "/api/v1/book?class=%s&hour=%s" % (q, choice["hour"]), body)
        actions.append(ans["action"])
        print("ledger: %s: %s" % (ans["action"], ans["why"]), file=sys.stderr)
        if ans["action"] == "stop":
            return 1
        # The answer names the lane to run the next attempt on, with its endpoint.
        if ans["endpoint"] is None:
            print("ledger said %s but named no lane" % ans["action"], file=sys.stderr)
            return 1
        lane = ans["endpoint"]
        # An attempt that ended in an error is sent with "error": true, and
        # the ledger answers no retry_free after it; a paid lane that failed
        # at once (a refused key, a lane down) costs no time, and its cut_over
        # would come again and again. A lane is not tried twice after an error.
        if lane["lane"] in errored:
            print("lane %s failed with an error before: not trying it again" % lane["lane"], file=sys.stderr)
            return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line, not a traceback: a lane or the API down, a key not set
        print("lanewatch_job: %s" % e, file=sys.stderr)
        sys.exit(1)
