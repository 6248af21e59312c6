#!/usr/bin/env python3
"""How compile time grows with graph depth: otc's compilers on deep chains, fitted exponent.

Usage: bench/compile_scaling.py [OTC_BINARY] [--sizes 1000,2000,...] [--timeout S]
                                [--kinds neuron,dense] [--modes jit,asm,c,ctrain] [--repeat R]

Two deep models, N = 1k, 2k, 4k, 8k, 16k by default:
  neuron  a neat-python network (`otc import`): input -> N tanh neurons in a chain -> output;
  dense   an MLP 4 -> N Linear(4, 4) + ReLU layers -> 1, written as an .otm (the layout of
          docs/ARCHITECTURE.md's "The model file"; `otc new mlp` stops at 64 layers).
For each, the CPU time (user + system) of
  jit  `otc run M --input 1row.csv --jit` (compile, then one row),
  asm  `otc compile M --emit-asm m.s`,
  c    `otc compile M --emit-c DIR` and `gcc -O2 -c DIR/m.c`,
  ctrain  the same with `--train` (forward, backward and the Adam step; not by default),
with the interpreter's `otc run` on the same model as the baseline taken off `jit` (loading
and planning are in both). The exponent of N is fitted by least squares on log-log: 1 is
linear, 2 quadratic. A run slower than --timeout (default 60 s) is stopped and larger N of
that row are skipped. Timing is for humans: no test asserts on it; on a loaded machine, run
with --repeat 3 (the best of three is kept).
"""
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reader_scaling import slope  # noqa: E402


def chain_json(n):
    """neat-python's network JSON: input -1 -> neurons 1..n in a chain -> output 0."""
    def neuron(i, kind):
        return {"id": i, "type": kind, "activation": {"name": "tanh", "custom": False},
                "aggregation": {"name": "sum", "custom": False}, "bias": 0.01 * (i % 7),
                "response": 1.0}
    nodes = [neuron(0, "output")] + [neuron(i, "hidden") for i in range(1, n + 1)]
    conns = [{"from": i - 1 if i > 1 else -1, "to": i, "weight": 0.9 + 0.01 * (i % 5),
              "enabled": True} for i in range(1, n + 1)]
    conns.append({"from": n, "to": 0, "weight": 1.0, "enabled": True})
    return {"format_version": "1.0", "network_type": "feedforward",
            "topology": {"input_keys": [-1], "output_keys": [0]},
            "nodes": nodes, "connections": conns}


def dense_otm(path, n, width=4):
    """An .otm of n Linear(width, width) + ReLU layers, then Linear(width, 1)."""
    rng = random.Random(1)
    nodes, data = [{"id": 0, "op": "input", "name": "x", "shape": [-1, width], "inputs": []}], []

    def param(name, shape):
        nodes.append({"id": len(nodes), "op": "parameter", "name": name, "shape": shape,
                      "inputs": [], "trainable": True, "offset": len(data)})
        count = shape[0] * (shape[1] if len(shape) > 1 else 1)
        data.extend(rng.uniform(-0.5, 0.5) for _ in range(count))
        return len(nodes) - 1

    def node(op, shape, inputs, **extra):
        nodes.append(dict({"id": len(nodes), "op": op, "shape": shape, "inputs": inputs}, **extra))
        return len(nodes) - 1

    x = 0
    for i in range(n + 1):
        out = width if i < n else 1
        w, b = param(f"fc{i}.weight", [width, out]), param(f"fc{i}.bias", [out])
        m = node("matmul", [-1, out], [x, w])
        x = node("add", [-1, out], [m, node("row_broadcast", [-1, out], [b, m])])
        if i < n:
            x = node("relu", [-1, out], [x], alpha=0)
    doc = json.dumps({"format": "otm", "version": 1, "nodes": nodes, "outputs": [x], "meta": {}},
                     separators=(",", ":")).encode()
    body = (b"OTCMODEL" + struct.pack("<IIQ", 1, 0, len(doc)) + doc +
            struct.pack("<Q", len(data)) + struct.pack(f"<{len(data)}f", *data))
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def make_model(otc, d, kind, n):
    """Writes the model of `kind` with depth n in d; returns its path and its input width."""
    path = f"{d}/{kind}{n}.otm"
    if kind == "neuron":
        with open(f"{d}/{kind}{n}.json", "w") as f:
            json.dump(chain_json(n), f, separators=(",", ":"))
        cmd = [otc, "import", f"{d}/{kind}{n}.json", "-o", path]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return path, 1
    dense_otm(path, n)
    return path, 4


def cpu_seconds():
    """User + system CPU time of the finished children so far."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def timed(cmds, timeout, repeat):
    """The best CPU time (s, user + system: steadier than wall time on a shared machine) of
    running cmds one after the other, or None past timeout (wall)."""
    best = None
    for _ in range(repeat):
        t0 = cpu_seconds()
        for cmd in cmds:
            # a session of its own, so a timeout ends gcc's cc1 too, not only the driver
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 start_new_session=True)
            try:
                _, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                return None
            if p.returncode != 0:
                sys.exit(f"{' '.join(cmd)} exited {p.returncode}: {err.decode(errors='replace')}")
        dt = cpu_seconds() - t0
        best = dt if best is None else min(best, dt)
    return best


def option(args, name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def main():
    args = sys.argv[1:]
    sizes = [int(s) for s in option(args, "--sizes", "1000,2000,4000,8000,16000").split(",")]
    timeout = float(option(args, "--timeout", "60"))
    kinds = option(args, "--kinds", "neuron,dense").split(",")
    modes = option(args, "--modes", "jit,asm,c").split(",")
    repeat = int(option(args, "--repeat", "1"))
    otc = os.path.abspath(args[0] if args else "build/release/otc")
    cc = os.environ.get("CC", "gcc")
    print(f"{'model':<8} {'mode':<5} " + " ".join(f"{n:>8}" for n in sizes) + "  exponent")
    with tempfile.TemporaryDirectory() as d:
        for kind in kinds:
            rows = {m: [] for m in modes}
            for n in sizes:
                path, width = make_model(otc, d, kind, n)
                csv = f"{d}/in{width}.csv"
                with open(csv, "w") as f:
                    f.write(",".join(["0.5"] * width) + "\n")
                base = timed([[otc, "run", path, "--input", csv]], timeout, repeat)
                for m in modes:
                    if rows[m] and rows[m][-1] is None:
                        rows[m].append(None)  # the smaller N already timed out
                        continue
                    if m == "jit":
                        t = timed([[otc, "run", path, "--input", csv, "--jit"]], timeout, repeat)
                        t = None if t is None or base is None else max(t - base, 1e-3)
                    elif m == "asm":
                        t = timed([[otc, "compile", path, "--emit-asm", f"{d}/m.s"]], timeout,
                                  repeat)
                    else:
                        train = ["--train"] if m == "ctrain" else []
                        t = timed([[otc, "compile", path, "--emit-c", f"{d}/c", "--name", "m"]
                                   + train,
                                   [cc, "-O2", "-c", f"{d}/c/m.c", "-o", f"{d}/m.o"]], timeout,
                                  repeat)
                    rows[m].append(t)
                os.remove(path)
            for m in modes:
                pts = [(n, t) for n, t in zip(sizes, rows[m]) if t is not None]
                cells = " ".join(f"{t:>8.2f}" if t is not None else f"{'>' + str(int(timeout)):>8}"
                                 for t in rows[m])
                e = f"{slope(*zip(*pts)):.2f}" if len(pts) >= 2 else "-"
                print(f"{kind:<8} {m:<5} {cells}  {e:>8}", flush=True)


if __name__ == "__main__":
    main()
