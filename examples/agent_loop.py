#!/usr/bin/env python3
"""The agent loop over protege's HTTP service, with the Python standard library only.

protege never calls a model: the application does. This script is that application, with
a stand-in for the model and for the tools, and prints what `cargo run --example
agent_loop` prints:

1. a customer's mail arrives: POST /v1/mail;
2. POST /v1/runs gives round 0's Anthropic body; the loop sends it to the "model", runs the
   tools the response asks for, and posts the response and the results to
   POST /v1/runs/{id}/rounds, which answers the next body, until the model answers
   without tools;
3. the application sends that answer as its reply and posts the sent mail:
   POST /v1/mail?direction=outbound;
4. the customer answers (POST /v1/mail), and the request for the next reply
   (POST /v1/resolve) replays the run's tool round right after the mail it answered.

    protege demo > /dev/null        # the shipped personas and demo data in ./protege.db
    PROTEGE_SERVE_TOKEN=s3cret protege serve --listen 127.0.0.1:8080 &
    PROTEGE_SERVE_TOKEN=s3cret python3 examples/agent_loop.py --url http://127.0.0.1:8080

The base URL comes from --url or PROTEGE_URL (default http://127.0.0.1:8080), the token
from --token or PROTEGE_SERVE_TOKEN. Any answer other than 2xx ends the script with the
service's error message and exit status 1. The customer's mails get new Message-IDs on
every run, so the script can run again on the same database.
"""

import argparse
import json
import os
import secrets
import sys
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8080"


class ServiceError(Exception):
    """An answer other than 2xx, or no answer at all."""


class Protege:
    """The routes of `protege serve` this loop uses."""

    def __init__(self, base_url, token):
        self.base_url = base_url.rstrip("/")
        self.token = token

    def post(self, path, body, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method="POST")
        request.add_header("Content-Type", content_type)
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as e:
            # protege's errors are {"error": {"kind", "message"}}.
            text = e.read().decode(errors="replace")
            try:
                error = json.loads(text)["error"]
                text = f"{error['kind']}: {error['message']}"
            except (ValueError, KeyError, TypeError):
                pass
            raise ServiceError(f"POST {path}: HTTP {e.code} {text}") from None
        except urllib.error.URLError as e:
            raise ServiceError(f"POST {path}: cannot reach {self.base_url}: {e.reason}") from None

    def mail(self, raw, direction="inbound"):
        return self.post(f"/v1/mail?direction={direction}", raw, "message/rfc822")


def mail(headers, body):
    """A raw RFC 5322 message."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return head + "\r\n" + body.replace("\n", "\r\n") + "\r\n"


def the_story(protege):
    """The whole story; returns the lines it prints."""
    out = []

    # 1. The customer's mail arrives.
    first_id = f"<kim-{secrets.token_hex(8)}@example.com>"
    first = protege.mail(mail({
        "Message-ID": first_id,
        "From": "Kim Lee <kim@example.com>",
        "To": "support@acme.test",
        "Subject": "Where is my order A-2087?",
        "Date": "Tue, 10 Mar 2026 09:00:00 +0000",
    }, "Hi, order A-2087 was supposed to arrive yesterday. Where is it?\n\nKim"))
    out.append(f"stored the customer's mail ({first['direction']})")

    # 2. The run: send each body, record the response and the tool results, until done.
    run = protege.post("/v1/runs", {
        "persona": "support", "message_id": first_id, "format": "anthropic",
        "now": "2026-03-10T09:01:00Z",  # a fixed clock: the same output every run
    })
    round_, body = run["round"], run["body"]
    while True:
        response = model(body)  # in production: POST it to the provider
        results = [call_tool(call) for call in blocks(response["content"], "tool_use")]
        out.append(f"round {round_}: {summary(response)}")
        step = protege.post(f"/v1/runs/{run['run_id']}/rounds",
                            {"round": round_, "response": response, "results": results})
        if step["status"] == "continue":
            round_, body = step["round"], step["body"]
        elif step["status"] == "done":
            out.append(f"run done, usage {compact(step['usage'])}")
            answer = step["text"]
            break
        else:
            raise ServiceError(f"the run stopped: {step.get('stop_reason')}")

    # 3. The application sends the answer (SMTP, an API) and stores the mail it sent (with
    #    a fixed Date here, for the same output every run). Its Message-ID must be
    #    unpredictable (see SECURITY.md): 128 random bits.
    reply_id = f"<{secrets.token_hex(16)}@acme.test>"
    stored = protege.mail(mail({
        "Message-ID": reply_id,
        "From": "Acme Support <support@acme.test>",
        "To": "Kim Lee <kim@example.com>",
        "Subject": "Re: Where is my order A-2087?",
        "Date": "Tue, 10 Mar 2026 09:02:00 +0000",
        "In-Reply-To": first_id,
        "References": first_id,
    }, answer), direction="outbound")
    same_thread = "true" if stored["thread_id"] == first["thread_id"] else "false"
    out.append(f"stored the reply we sent ({stored['direction']}, "
               f"in the customer's thread: {same_thread})")

    # 4. The customer answers; the request for the next reply replays the run's tool round.
    next_id = f"<kim-{secrets.token_hex(8)}@example.com>"
    nxt = protege.mail(mail({
        "Message-ID": next_id,
        "From": "Kim Lee <kim@example.com>",
        "To": "support@acme.test",
        "Subject": "Re: Where is my order A-2087?",
        "Date": "Tue, 10 Mar 2026 09:40:00 +0000",
        "In-Reply-To": reply_id,
        "References": f"{first_id} {reply_id}",
    }, "Thanks! Can you ask the carrier to deliver it to my office instead?"))
    out.append(f"stored the customer's answer ({nxt['direction']})")
    request = protege.post("/v1/resolve", {
        "persona": "support", "message_id": next_id, "format": "messages",
        "now": "2026-03-10T09:41:00Z",
    })
    # The thread part: the persona's system messages left out.
    thread = [m for m in request["messages"] if m["role"] != "system"]
    out.append("the next request's thread:")
    out.append(json.dumps(thread, indent=2, ensure_ascii=False))
    return out


def model(body):
    """The stand-in model: what Anthropic's Messages API could answer to `body`. While the
    last user turn holds no tool results it asks for the order named in the mail and its
    tracking, two calls at once; then it answers from the results."""
    last_turn = body["messages"][-1]
    results = list(blocks(last_turn["content"], "tool_result"))
    if not results:
        order = order_number(last_turn["content"])
        content = [
            {"type": "text", "text": "I'll look the order up and check the carrier's tracking."},
            {"type": "tool_use", "id": "toolu_01LookupOrder", "name": "lookup_order",
             "input": {"order": order}, "caller": {"type": "direct"}},
            {"type": "tool_use", "id": "toolu_01TrackingLog", "name": "tracking_log",
             "input": {"order": order}, "caller": {"type": "direct"}},
        ]
        # This prompt is shorter than the 1,024 tokens Anthropic caches at least: no cache
        # counts, all input is uncached.
        return response("msg_01StandInRound0", content, "tool_use", [861, 0, 0, 118])

    def result(call_id):
        """The result of call `call_id`, as JSON."""
        for r in results:
            if r["tool_use_id"] == call_id:
                return json.loads(r["content"])
        return {}

    order, tracking = result("toolu_01LookupOrder"), result("toolu_01TrackingLog")
    latest = (tracking.get("events") or ["none"])[-1]
    text = (f"Hello Kim,\n\nyour order {order.get('order', '?')} left our warehouse on "
            f"{order.get('shipped_on', '?')}. The carrier's latest event: {latest}.\n\n"
            "Best,\nAcme Support")
    # Round 0's prompt again, with the assistant's calls and the two results.
    return response("msg_01StandInRound1", [{"type": "text", "text": text}], "end_turn",
                    [1012, 0, 0, 71])


def response(message_id, content, stop_reason, usage):
    """An Anthropic Messages response; `usage` is input, cache write, cache read and output
    tokens."""
    input_tokens, cache_write, cache_read, output = usage
    return {
        "id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": cache_write,
                  "cache_read_input_tokens": cache_read, "output_tokens": output},
    }


def order_number(content):
    """The first word like `A-2087` in a message's content (a string, or text blocks)."""
    if isinstance(content, str):
        text = content
    else:
        text = "\n".join(b.get("text", "") for b in blocks(content, "text"))
    word = ""
    for c in text + " ":
        if c.isascii() and (c.isalnum() or c == "-"):
            word += c
        elif word.startswith("A-"):
            return word
        else:
            word = ""
    return "unknown"


def blocks(content, kind):
    """The blocks of type `kind` of a content list (none of a plain string)."""
    if isinstance(content, list):
        return (b for b in content if b.get("type") == kind)
    return iter(())


def call_tool(call):
    """Runs the stand-in tool a `tool_use` block names; its result answers the block's id."""
    tools = {"lookup_order": lookup_order, "tracking_log": tracking_log}
    tool = tools.get(call["name"])
    if tool is None:
        return {"tool_call_id": call["id"], "content": f"unknown tool {call['name']!r}",
                "is_error": True}
    return {"tool_call_id": call["id"], "content": tool(call["input"].get("order", ""))}


def lookup_order(order):
    """Stand-in tool: the order as the shop's database knows it, as JSON text."""
    return compact({"order": order, "status": "shipped", "total": "89.00 EUR",
                    "shipped_on": "2026-03-06"})


def tracking_log(order):
    """Stand-in tool: the carrier's events of the order, as JSON text."""
    return compact({"order": order, "carrier": "Colis Express", "events": [
        "2026-03-06 picked up in Lille",
        "2026-03-07 in transit",
        "2026-03-09 held at the Lyon depot: address incomplete",
    ]})


def summary(response):
    """One line about a response: the tools it calls, or that it answers."""
    calls = [f"{c['name']} {compact(c['input'])}" for c in blocks(response["content"], "tool_use")]
    return f"the model calls {', '.join(calls)}" if calls else "the model answers"


def compact(value):
    """JSON without spaces, as protege's Rust example prints it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("PROTEGE_URL", DEFAULT_URL),
                        help=f"the service's base URL (default: $PROTEGE_URL, else {DEFAULT_URL})")
    parser.add_argument("--token", default=os.environ.get("PROTEGE_SERVE_TOKEN"),
                        help="the bearer token (default: $PROTEGE_SERVE_TOKEN)")
    args = parser.parse_args()
    try:
        lines = the_story(Protege(args.url, args.token))
    except ServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
