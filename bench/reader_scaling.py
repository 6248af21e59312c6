#!/usr/bin/env python3
"""How each of otc's readers scales: time and peak memory at three input sizes, fitted exponent.

Usage: bench/reader_scaling.py [OTC_BINARY] [--scale X]

For each reader (a model .otm, a neat-python network JSON, a CSV, IDX images, a NEAT config, a
NEAT checkpoint) it writes inputs of size s, 4s and 16s to a temporary directory, runs the otc
command that reads them, and measures wall time and peak RSS (the child's VmHWM, sampled while it runs). The
cost of starting otc (measured on `otc --version`) is taken off both before the exponent of
size is fitted by least squares on log-log: 1 is linear, 2 quadratic. A reader that turned
quadratic would show here long before a user waited minutes. Timing is for humans: no test
asserts on it.
"""
import gzip
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time


def peak_kib(pid):
    """VmHWM of a running process: its own high-water mark (ru_maxrss would carry Python's
    from the fork), or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def measure(cmd, repeat=3):
    """The best wall time (s) of `repeat` runs of cmd, and the largest peak RSS (KiB) seen,
    sampled every 2 ms while it runs."""
    best_t, best_kb = None, 0
    for _ in range(repeat):
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        kb = 0
        while p.poll() is None:
            k = peak_kib(p.pid)
            kb = max(kb, k or 0)
            time.sleep(0.002)
        dt = time.monotonic() - t0
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        if p.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} exited {p.returncode}: {err}")
        best_t = dt if best_t is None else min(best_t, dt)
        best_kb = max(best_kb, kb)
    return best_t, best_kb


def neuron(i, kind):
    return {"id": i, "type": kind, "activation": {"name": "tanh", "custom": False},
            "aggregation": {"name": "sum", "custom": False}, "bias": 0.1, "response": 1.0}


def network(n_hidden, n_inputs=4):
    """A feed-forward neat-python export: inputs -> n_hidden neurons -> one output."""
    nodes = [neuron(0, "output")] + [neuron(i, "hidden") for i in range(1, n_hidden + 1)]
    conns = [{"from": -1 - (i % n_inputs), "to": i, "weight": 0.5, "enabled": True}
             for i in range(1, n_hidden + 1)]
    conns += [{"from": i, "to": 0, "weight": 0.25, "enabled": True}
              for i in range(1, min(n_hidden, 60000) + 1)]
    return {"format_version": "1.0", "network_type": "feedforward",
            "topology": {"input_keys": [-1 - k for k in range(n_inputs)], "output_keys": [0]},
            "nodes": nodes, "connections": conns}


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


class Readers:
    """Each reader: make(size) writes the input in d; returns the command that reads it and
    the input's path (for its size)."""

    def __init__(self, otc, d, src):
        self.otc, self.d, self.src = otc, d, src
        write_json(f"{d}/small.json", network(8))
        subprocess.run([otc, "import", f"{d}/small.json", "-o", f"{d}/small.otm"], check=True,
                       stdout=subprocess.DEVNULL)
        write_json(f"{d}/img.json", network(8, n_inputs=784))
        subprocess.run([otc, "import", f"{d}/img.json", "-o", f"{d}/img.otm"], check=True,
                       stdout=subprocess.DEVNULL)

    def model(self, n):  # .otm of n neurons, read by summary
        write_json(f"{self.d}/m{n}.json", network(n))
        subprocess.run([self.otc, "import", f"{self.d}/m{n}.json", "-o", f"{self.d}/m{n}.otm"],
                       check=True, stdout=subprocess.DEVNULL)
        return [self.otc, "summary", f"{self.d}/m{n}.otm"], f"{self.d}/m{n}.otm"

    def neat_python(self, n):  # network JSON of n neurons, read by import
        write_json(f"{self.d}/n{n}.json", network(n))
        return ([self.otc, "import", f"{self.d}/n{n}.json", "-o", f"{self.d}/n{n}.otm"],
                f"{self.d}/n{n}.json")

    def csv(self, n):  # n rows of 4 features, read by run
        with open(f"{self.d}/c{n}.csv", "w") as f:
            f.write("a,b,c,d\n")
            f.writelines(f"{i % 7},{i % 5}.5,-{i % 3},1e-{i % 9}\n" for i in range(n))
        return ([self.otc, "run", f"{self.d}/small.otm", "--input", f"{self.d}/c{n}.csv", "-o",
                 os.devnull], f"{self.d}/c{n}.csv")

    def idx(self, n):  # n 28x28 images, gzip, read by run
        os.makedirs(f"{self.d}/i{n}", exist_ok=True)
        pixels = bytes((i * 7) % 256 for i in range(784)) * n
        with open(f"{self.d}/i{n}/t10k-images-idx3-ubyte.gz", "wb") as f:
            f.write(gzip.compress(struct.pack(">IIII", 0x803, n, 28, 28) + pixels, 1))
        with open(f"{self.d}/i{n}/t10k-labels-idx1-ubyte.gz", "wb") as f:
            f.write(gzip.compress(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n))))
        return ([self.otc, "run", f"{self.d}/img.otm", "--data", f"idx:{self.d}/i{n}", "-o",
                 os.devnull], f"{self.d}/i{n}/t10k-images-idx3-ubyte.gz")

    def neat_config(self, n):  # the xor config and n comment lines, read by a 1-generation run
        with open(f"{self.src}/examples/neat/xor.ini") as f:
            base = f.read()
        with open(f"{self.d}/x{n}.ini", "w") as f:
            f.write("".join(f"# comment line {i} of padding\n" for i in range(n)) + base)
        return ([self.otc, "evolve", f"{self.d}/x{n}.ini", "--task", "xor", "--generations", "1",
                 "--threads", "1", "--out", f"{self.d}/x{n}.otm"], f"{self.d}/x{n}.ini")

    def checkpoint(self, n):  # a population of n genomes, resumed for one generation
        with open(f"{self.src}/examples/neat/xor.ini") as f:
            base = f.read()
        ini = f"{self.d}/p{n}.ini"
        with open(ini, "w") as f:
            f.write(base.replace("pop_size", f"pop_size = {n}\n#", 1))
        subprocess.run([self.otc, "evolve", ini, "--task", "xor", "--generations", "1",
                        "--threads", "1", "--seed", "1", "--checkpoint-every", "1",
                        "--checkpoint-prefix", f"{self.d}/p{n}-"], stdout=subprocess.DEVNULL)
        return ([self.otc, "evolve", ini, "--task", "xor", "--generations", "2", "--threads", "1",
                 "--resume", f"{self.d}/p{n}-1.json", "--out", f"{self.d}/p{n}.otm"],
                f"{self.d}/p{n}-1.json")


def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main():
    args = sys.argv[1:]
    scale = 1.0
    if "--scale" in args:
        i = args.index("--scale")
        scale = float(args[i + 1])
        del args[i:i + 2]
    otc = os.path.abspath(args[0] if args else "build/otc")
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base_t, base_kb = measure([otc, "--version"], 5)
    # the smallest size of each reader; the others are 4 and 16 times it
    sizes = {"model": 4000, "neat_python": 4000, "csv": 50000, "idx": 2000, "neat_config": 1500,
             "checkpoint": 150}
    print(f"otc start-up: {base_t * 1e3:.0f} ms, {base_kb / 1024:.0f} MiB (taken off below)")
    print(f"{'reader':<12} {'size':>8} {'input':>10} {'time s':>8} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as d:
        r = Readers(otc, d, src)
        for name, s0 in sizes.items():
            ns, ts, ms = [], [], []
            for k in (1, 4, 16):
                n = max(1, int(s0 * k * scale))
                cmd, path = getattr(r, name)(n)
                t, kb = measure(cmd)
                size = os.path.getsize(path)
                print(f"{name:<12} {n:>8} {size / 1e6:>8.2f}MB {t:>8.3f} {kb / 1024:>9.1f}")
                ns.append(n)
                ts.append(t)
                ms.append(kb)
            # the start-up taken off, but never more than most of the smallest run (on a
            # loaded machine the two are measured at different moments)
            t0, m0 = min(base_t, 0.9 * ts[0]), min(base_kb, 0.9 * ms[0])
            et = slope(ns, [t - t0 for t in ts])
            em = slope(ns, [m - m0 for m in ms])
            print(f"{name:<12} exponent: time {et:.2f}, memory {em:.2f}")


if __name__ == "__main__":
    main()
