#!/usr/bin/env python3
"""The load of scripts/scale-test: for DURATION seconds, THREADS workers each post a new
inbound mail (a new thread, or a reply in one of the worker's threads) through the load
balancer, then resolve it at once, recording every request's status and latency.

Usage: scale-load.py URL TOKEN DURATION THREADS OUT.json

A mail whose resolve fails is resolved again (up to five times, a second apart) to tell
a mail that did not resolve from a request that failed. Python 3 standard library only.
"""

import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

URL, TOKEN, DURATION, THREADS, OUT = sys.argv[1:6]
DURATION = float(DURATION)
THREADS = int(THREADS)
HOST = urllib.parse.urlsplit(URL)
SENDERS = [
    ("Alice Martin", "alice@example.com"),
    ("Bob Okafor", "bob@example.com"),
    ("Kim Lee", "kim@example.com"),
    ("Mia Rossi", "mia@example.com"),
    ("Zoe Park", "zoe@example.net"),
]


class Client:
    """One kept-alive connection, opened again after a failure."""

    def __init__(self):
        self.conn = None

    def request(self, method, path, body, content_type):
        headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": content_type}
        start = time.monotonic()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(HOST.hostname, HOST.port, timeout=30)
            self.conn.request(method, path, body=body.encode(), headers=headers)
            res = self.conn.getresponse()
            text = res.read().decode("utf-8", "replace")
            status = res.status
        except (OSError, http.client.HTTPException) as e:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            status, text = 0, "{}: {}".format(type(e).__name__, e)
        return status, text, time.monotonic() - start


def mail(message_id, sender, parent, subject, n):
    name, address = sender
    reply = ""
    if parent:
        reply = "In-Reply-To: {0}\r\nReferences: {0}\r\n".format(parent)
    date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
    return (
        "Message-ID: {}\r\nFrom: {} <{}>\r\nTo: support@acme.test\r\nSubject: {}\r\n"
        "Date: {}\r\n{}\r\nMessage {} of this thread: where is my order?\r\n"
    ).format(message_id, name, address, subject, date, reply, n)


def worker(index, deadline, results, lock):
    rng = random.Random(index)
    client = Client()
    threads = []  # [sender, subject, last message id, count]
    seq = 0
    records = []
    while time.monotonic() < deadline:
        seq += 1
        message_id = "<load-{}-{}-{}@example.org>".format(index, seq, rng.getrandbits(32))
        if threads and rng.random() < 0.6:
            thread = rng.choice(threads)
            thread[3] += 1
            body = mail(message_id, thread[0], thread[2], "Re: " + thread[1], thread[3])
            thread[2] = message_id
        else:
            sender = rng.choice(SENDERS)
            subject = "Order question {}-{}".format(index, seq)
            threads.append([sender, subject, message_id, 1])
            body = mail(message_id, sender, None, subject, 1)
        at = time.monotonic()
        status, text, took = client.request("POST", "/v1/mail", body, "message/rfc822")
        records.append({"at": at, "route": "mail", "status": status, "seconds": took,
                        "error": None if status in (200, 201) else text[:300]})
        if status not in (200, 201):
            continue
        resolve = json.dumps({"persona": "support", "message_id": message_id,
                              "format": "anthropic"})
        first = True
        for attempt in range(6):
            at = time.monotonic()
            status, text, took = client.request("POST", "/v1/resolve", resolve,
                                                "application/json")
            ok = status == 200 and '"messages"' in text
            records.append({"at": at, "route": "resolve", "status": status, "seconds": took,
                            "first": first, "message_id": message_id,
                            "error": None if ok else text[:300]})
            if ok:
                break
            first = False
            time.sleep(1)
    with lock:
        results.extend(records)


def main():
    deadline = time.monotonic() + DURATION
    results, lock = [], threading.Lock()
    workers = [threading.Thread(target=worker, args=(i, deadline, results, lock))
               for i in range(THREADS)]
    start = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for r in results:
        r["at"] -= start
    with open(OUT, "w") as f:
        json.dump({"seconds": time.monotonic() - start, "threads": THREADS,
                   "requests": results}, f)


main()
