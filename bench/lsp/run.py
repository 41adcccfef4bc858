#!/usr/bin/env python3
"""Latency of `meshc lsp`: time from `didChange` on one module to the
`publishDiagnostics` that reflects it, on a synthetic fleet of 300 modules and 100
nodes (bench/fleet/generate.py).

    bench/lsp/run.py [--meshc PATH] [--rounds N] [--nodes N] [--modules M]
                     [--kinds semantic,syntax,comment] [--repo DIR --module FILE]

Build first: `cargo build --release -p meshc` (the default PATH is
target/release/meshc, or $CARGO_TARGET_DIR/release/meshc). Three kinds of edit, each
alternating between a broken and a fixed text of one module so that every edit
changes what is published:

  semantic  a default of the wrong type (E204): needs the repository compiled
  syntax    a missing `;` (E001): published from the buffer before compiling
  comment   a comment added: nothing to publish; measured to the end of the analysis
            (its `$/progress` end), which also covers refreshing the hover index

"broken" is the edit that makes the error, "fixed" the one that removes it (the
error is cleared when the compilation finds it gone). Prints p50, p95 and max per
kind, in milliseconds.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import queue
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def argument(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


class Client:
    def __init__(self, meshc):
        self.process = subprocess.Popen(
            [meshc, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.messages = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = stream.read(length)
            self.messages.put((time.perf_counter(), json.loads(body)))

    def send(self, message):
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)[1]

    def wait(self, predicate, timeout=120):
        deadline = time.perf_counter() + timeout
        while True:
            at, message = self.messages.get(timeout=max(0.0, deadline - time.perf_counter()))
            if "method" in message and "id" in message:
                # a server request (progress creation): accept it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            if predicate(message):
                return at, message


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    meshc = argument("--meshc", os.path.join(target, "release", "meshc"))
    rounds = int(argument("--rounds", "40"))
    nodes = argument("--nodes", "100")
    modules = argument("--modules", "300")
    kinds = argument("--kinds", "semantic,syntax,comment").split(",")
    repository = argument("--repo", None)
    if repository is None:
        out = tempfile.mkdtemp(prefix="mesh-lsp-bench-")
        subprocess.run(
            [sys.executable, os.path.join(REPO, "bench", "fleet", "generate.py"), nodes, out, "--modules", modules],
            check=True,
        )
        root = os.path.join(out, "mesh")
        module = os.path.join(root, "modules", "m150", "module.nix")
    else:
        # another repository: its module needs an integer default for the
        # semantic and syntax edits
        root = os.path.abspath(repository)
        module = os.path.join(root, argument("--module", "modules/web/module.nix"))
    uri = "file://" + os.path.realpath(module)
    with open(module) as handle:
        good = handle.read()
    # the generated modules' `default = 1;`, or else the first integer default
    # (another repository's module: `default = 8080;` in the example's web)
    import re
    default = "default = 1;" if "default = 1;" in good else (re.search(r"default = \d+;", good) or [""])[0]
    number = default[len("default = "):-1]
    broken = {
        "semantic": good.replace(default, f'default = "{number}";', 1) if default else good,
        "syntax": good.replace(default, default[:-1], 1) if default else good,
        "comment": good + "# edited\n",
    }
    assert all(broken[kind] != good for kind in kinds), "the module has the text each kind of edit changes"

    client = Client(meshc)
    client.request(
        "initialize",
        {"processId": None, "rootUri": None, "capabilities": {"window": {"workDoneProgress": True}}},
    )
    client.notify("initialized", {})
    started = time.perf_counter()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "nix", "version": 1, "text": good}},
    )
    client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end")
    print(f"first analysis (open): {1000 * (time.perf_counter() - started):.0f} ms")

    version = 1
    results = {}
    for kind in kinds:
        for round_index in range(rounds):
            for phase, text, has_errors in (
                ("broken", broken[kind], kind != "comment"),
                ("fixed", good, False),
            ):
                version += 1
                sent = time.perf_counter()
                client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
                )
                if kind == "comment":
                    at, _ = client.wait(
                        lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"
                    )
                else:
                    at, _ = client.wait(
                        lambda m: m.get("method") == "textDocument/publishDiagnostics"
                        and m["params"]["uri"] == uri
                        and bool(m["params"]["diagnostics"]) == has_errors
                    )
                    # let the analysis finish before the next edit, as a typing pause would
                    client.wait(
                        lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"
                    )
                results.setdefault(f"{kind} {phase}", []).append(1000 * (at - sent))
    client.request("shutdown", None)
    client.notify("exit", None)
    client.process.wait(timeout=30)

    fleet = f"{nodes} nodes, {modules} modules" if repository is None else root
    print(f"fleet: {fleet}; {rounds} rounds of broken/fixed per kind")
    print(f"{'edit':<16} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for kind, times in results.items():
        print(
            f"{kind:<16} {percentile(times, 0.5):8.1f} {percentile(times, 0.95):8.1f} {max(times):8.1f}"
        )


if __name__ == "__main__":
    main()
