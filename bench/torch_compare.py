#!/usr/bin/env python3
"""PyTorch eager and TorchScript on the CPU, timed on the same graph otc benchmarked.

    otc bench MODEL.otm --batch 256 --train --export graph.json
    python3 bench/torch_compare.py graph.json [--threads 1,2] [--peak FILE] [--json]

The JSON (written by `otc bench --export`) holds the graph node by node with its weights, the
batch, forward or training mode and the optimiser, and otc's own figures; this script builds
the same computation from PyTorch ops, node by node in id order (a topological order), times
it at 1 and 2 threads (median of 7 blocks, like otc bench) eagerly and as TorchScript (traced;
for a forward also frozen and optimised for inference) and prints all of them beside otc's,
with otc's speed over each peer's. When the graph has dense work (matmul, Conv2d, Neuron
multiply-adds) every row also shows its GFLOP/s and, given the one-thread sgemm peak (--peak:
a file `build/bench/sgemm_peak --write FILE` wrote, or that program; else $OTC_SGEMM_PEAK),
its fraction of it. Needs Debian's python3-torch (scripts/install-deps.sh --bench); --check
works without it.
"""
import argparse
import json
import math
import statistics
import sys
import time

from torch_peers import gflops_text, peak_gflops, torchscript_inference, torchscript_training


def load(path):
    with open(path) as f:
        desc = json.load(f)
    if desc.get("format") != "otc-bench-graph-1":
        sys.exit(f"{path}: not a graph exported by `otc bench --export`")
    return desc


class TorchGraph:
    """The exported graph as PyTorch ops; parameters are leaf tensors (trainable ones with
    requires_grad), inputs random in [-1, 1) like otc bench's."""

    def __init__(self, desc, torch, batch):
        self.torch = torch
        self.F = torch.nn.functional
        self.nodes = desc["nodes"]
        self.batch = batch
        self.params = {}
        self.inputs = {}
        gen = torch.Generator().manual_seed(12345)
        for n in self.nodes:
            if n["op"] == "parameter":
                shape = [d for d in n["shape"]] or []
                t = torch.tensor(n["value"], dtype=torch.float32).reshape(shape)
                trainable = bool(n.get("trainable", True))
                self.params[n["id"]] = torch.nn.Parameter(t, requires_grad=trainable)
            elif n["op"] == "input":
                shape = [batch if d == -1 else d for d in n["shape"]]
                self.inputs[n["id"]] = torch.rand(shape, generator=gen) * 2 - 1
        self.loss = desc.get("loss")
        # Labels for a softmax cross-entropy target: class indices, not uniform floats.
        for n in self.nodes:
            if n["op"] == "softmax_ce":
                lab = n["inputs"][1]
                logits = next(m for m in self.nodes if m["id"] == n["inputs"][0])
                classes = logits["shape"][-1]
                if lab in self.inputs:
                    self.inputs[lab] = torch.randint(0, classes, self.inputs[lab].shape,
                                                     generator=gen).float()

    def act(self, name, x, alpha):
        t, F = self.torch, self.F
        return {
            "identity": lambda: x,
            "sigmoid": lambda: t.sigmoid(x),
            "tanh": lambda: t.tanh(x),
            "relu": lambda: F.relu(x),
            "leaky_relu": lambda: F.leaky_relu(x, alpha),
            "softplus": lambda: F.softplus(x),
            "elu": lambda: F.elu(x, alpha),
            "gaussian": lambda: t.exp(-x * x),
            "sin": lambda: t.sin(x),
            "abs": lambda: t.abs(x),
            "sqrt": lambda: t.sqrt(x),
            "cos": lambda: t.cos(x),
            "reciprocal": lambda: t.reciprocal(x),
            "steep_sigmoid": lambda: t.sigmoid(4.9 * x),
        }[name]()

    def program(self, wanted):
        """The nodes `wanted` (ids) depend on, in id order, as (id, function of the values so
        far) pairs: worked out once, so timing measures PyTorch, not this bookkeeping."""
        t, F = self.torch, self.F
        by_id = {n["id"]: n for n in self.nodes}
        need, stack = set(), list(wanted)
        while stack:
            i = stack.pop()
            if i not in need:
                need.add(i)
                stack.extend(by_id[i]["inputs"])
        steps = []
        for n in self.nodes:
            if n["id"] in need:
                steps.append((n["id"], self.step(n, by_id)))
        return steps

    def step(self, n, by_id):
        t, F = self.torch, self.F
        op, ins, a = n["op"], n["inputs"], n.get("alpha", 0.0)
        i0 = ins[0] if ins else None
        i1 = ins[1] if len(ins) > 1 else None
        if op == "input":  # the run's arguments seed the values (see run)
            nid = n["id"]
            return lambda v: v[nid]
        if op == "parameter":
            p = self.params[n["id"]]
            return lambda v: p
        simple = {
            "add": lambda v: v[i0] + v[i1],
            "sub": lambda v: v[i0] - v[i1],
            "mul": lambda v: v[i0] * v[i1],
            "div": lambda v: v[i0] / v[i1],
            "neg": lambda v: -v[i0],
            "detach": lambda v: v[i0].detach(),
            "matmul": lambda v: v[i0] @ v[i1],
            "row_broadcast": lambda v: v[i0].expand_as(v[i1]),
            "sum": lambda v: v[i0].sum(),
            "mean": lambda v: v[i0].mean(),
            "softmax": lambda v: t.softmax(v[i0], dim=-1),
            "log_softmax": lambda v: t.log_softmax(v[i0], dim=-1),
            "mse": lambda v: F.mse_loss(v[i0], v[i1]),
            "bce": lambda v: F.binary_cross_entropy(v[i0].clamp(1e-7, 1 - 1e-7), v[i1]),
            "softmax_ce": lambda v: F.cross_entropy(v[i0], v[i1].reshape(-1).long()),
        }
        if op in simple:
            return simple[op]
        if op == "scale":
            s = n["scale"]
            return lambda v: v[i0] * s
        if op in ("sigmoid", "tanh", "relu", "leaky_relu", "softplus", "elu", "gaussian", "sin",
                  "abs", "identity", "sqrt", "cos", "reciprocal"):
            return lambda v: self.act(op, v[i0], a)
        if op == "reshape":
            shape = [-1 if d == -1 else d for d in n["shape"]]
            return lambda v: v[i0].reshape(shape)
        if op == "flatten":
            batched = by_id[i0]["shape"][:1] == [-1]
            return (lambda v: v[i0].reshape(v[i0].shape[0], -1)) if batched else (
                lambda v: v[i0].reshape(-1))
        if op == "concat":
            axis = n["axis"]
            return lambda v: t.cat([v[j] for j in ins], dim=axis)
        if op == "slice":
            axis, start, ln = n["axis"], n["start"], n["len"]
            return lambda v: v[i0].narrow(axis, start, ln)
        if op == "select":
            axis, start = n["axis"], n["start"]
            return lambda v: v[i0].select(axis, start)
        if op == "conv2d":
            b = ins[2] if len(ins) > 2 else None
            kw = dict(stride=tuple(n["stride"]), padding=tuple(n["padding"]),
                      dilation=tuple(n["dilation"]), groups=n["groups"])
            return lambda v: F.conv2d(v[i0], v[i1], v[b] if b is not None else None, **kw)
        if op in ("maxpool2d", "avgpool2d"):
            k, s, p = tuple(n["kernel"]), tuple(n["stride"]), tuple(n["padding"])
            if op == "maxpool2d":
                return lambda v: F.max_pool2d(v[i0], k, s, p)
            # padding counts as zeros in the mean, as otc's avgpool2d
            return lambda v: F.avg_pool2d(v[i0], k, s, p, count_include_pad=True)
        if op == "neuron":
            srcs, cols, scale, act, batch = ins[2:], n["cols"], n["scale"], n["act"], self.batch
            if srcs:
                def neuron(v):
                    x = t.stack([v[s][:, c] for s, c in zip(srcs, cols)], dim=1)
                    return self.act(act, v[i1] + scale * (x @ v[i0]), a).unsqueeze(1)
            else:
                def neuron(v):
                    return self.act(act, v[i1].expand(batch), a).unsqueeze(1)
            return neuron
        sys.exit(f"node {n['id']}: op '{op}' has no PyTorch spelling here")

    def run(self, steps, inputs=None):
        """All values of `steps`, the inputs from `inputs` (id -> tensor; default the graph's
        random ones)."""
        v = dict(inputs if inputs is not None else self.inputs)
        for i, f in steps:
            v[i] = f(v)
        return v

    def module(self, wanted):
        """The computation of `wanted` (ids) as a torch.nn.Module taking the inputs in id
        order and returning the wanted values, its parameters the graph's: what TorchScript
        traces."""
        g, steps, ids = self, self.program(wanted), sorted(self.inputs)
        torch = self.torch

        class Graph(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ps = torch.nn.ParameterList(list(g.params.values()))

            def forward(self, *xs):
                v = g.run(steps, dict(zip(ids, xs)))
                return tuple(v[w] for w in wanted)

        return Graph(), tuple(self.inputs[i] for i in ids)


def dense_flops(desc):
    """Forward flops per sample of the graph's dense work (2 per multiply-add), as
    bench/gflops.h counts them."""
    by_id = {n["id"]: n for n in desc["nodes"]}
    flops = 0.0
    for n in desc["nodes"]:
        if n["op"] == "matmul":
            a = by_id[n["inputs"][0]]["shape"]
            rows = 1 if len(a) == 2 and a[0] == -1 else a[0]
            flops += 2.0 * rows * a[-1] * n["shape"][-1]
        elif n["op"] == "conv2d":
            w = by_id[n["inputs"][1]]["shape"]
            o = n["shape"]
            flops += 2.0 * o[1] * o[2] * o[3] * w[1] * w[2] * w[3]
        elif n["op"] == "neuron":
            flops += 2.0 * (len(n["inputs"]) - 2)
    return flops


def median_us(fn, block_ms=20.0, warmup=1):
    """Median over 7 blocks of the time per call in microseconds (as `otc bench`), after
    `warmup` calls (TorchScript's profiling executor optimises only after its first runs)."""
    for _ in range(warmup):
        fn()
    k = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        dt = time.perf_counter() - t0
        if dt * 1e3 >= block_ms or k >= 1 << 24:
            break
        k = max(k * 2, math.ceil(k * block_ms / max(dt * 1e3, 1e-6) * 1.2)) if dt > 0 else k * 2
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        times.append((time.perf_counter() - t0) / k * 1e6)
    return statistics.median(times)


def make_optimizer(torch, o, params):
    if o["kind"] == "sgd":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"],
                               nesterov=o["nesterov"], weight_decay=o["weight_decay"])
    if o["kind"] == "adam":
        return torch.optim.Adam(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                                eps=o["eps"], weight_decay=o["weight_decay"])
    return torch.optim.AdamW(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                             eps=o["eps"], weight_decay=o["weight_decay"])


def time_torch(desc, threads, script):
    """Microseconds per sample of PyTorch at `threads` threads: eager, or TorchScript when
    `script` (traced for a training step, traced + frozen + optimised for a forward)."""
    import torch

    torch.set_num_threads(threads)
    batch = desc["batch"]
    g = TorchGraph(desc, torch, batch)
    outputs = desc["outputs"]
    if desc["mode"] == "train":
        if g.loss is None:
            sys.exit("training mode but the export names no loss")
        params = [p for p in g.params.values() if p.requires_grad]
        opt = make_optimizer(torch, desc["optimizer"], params)
        if script:
            m, xs = g.module([g.loss])
            traced = torchscript_training(torch, m, xs)

            def loss():
                return traced(*xs)[0]
        else:
            steps = g.program([g.loss])

            def loss():
                return g.run(steps)[g.loss]

        def step():
            opt.zero_grad(set_to_none=False)
            loss().backward()
            opt.step()

        return median_us(step, warmup=5 if script else 1) / batch

    if script:
        m, xs = g.module(outputs)
        frozen = torchscript_inference(torch, m, xs)

        def forward():
            with torch.no_grad():
                frozen(*xs)
    else:
        steps = g.program(outputs)

        def forward():
            with torch.no_grad():
                g.run(steps)

    return median_us(forward, warmup=5 if script else 1) / batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph", help="JSON written by `otc bench ... --export FILE`")
    ap.add_argument("--threads", default="1,2", help="PyTorch thread counts (default 1,2)")
    ap.add_argument("--peak", help="one-thread sgemm GFLOP/s: a file holding it or the "
                    "sgemm_peak program (default $OTC_SGEMM_PEAK)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--check", action="store_true",
                    help="only read the graph and list its ops (no PyTorch needed)")
    args = ap.parse_args()
    desc = load(args.graph)
    if args.check:
        ops = {}
        for n in desc["nodes"]:
            ops[n["op"]] = ops.get(n["op"], 0) + 1
        print(f"{args.graph}: {len(desc['nodes'])} nodes, batch {desc['batch']}, "
              f"{desc['mode']}: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("PyTorch is not installed (Debian: python3-torch; "
                 "scripts/install-deps.sh --bench)")
    threads = [int(t) for t in args.threads.split(",") if t]
    peers = {}  # name -> us per sample
    for t in threads:
        suffix = f"{t} thread{'s' if t > 1 else ''}"
        peers[f"pytorch eager, {suffix}"] = time_torch(desc, t, False)
        peers[f"torchscript, {suffix}"] = time_torch(desc, t, True)
    otc = desc.get("otc", {})
    mine = {name: otc[key] for key, name in (("interpreter_us_per_sample", "otc interpreter"),
                                             ("jit_us_per_sample", "otc jit"),
                                             ("c_us_per_sample", "otc emitted C"))
            if otc.get(key)}
    flops = dense_flops(desc) * (3 if desc["mode"] == "train" else 1)
    peak = peak_gflops(args.peak)
    if args.json:
        out = {"batch": desc["batch"], "mode": desc["mode"], "flops_per_sample": flops,
               "sgemm_peak_gflops": peak}
        for name, us in peers.items():  # torch_1t_... (eager), torchscript_1t_...
            kind = "torchscript" if name.startswith("torchscript") else "torch"
            out[f"{kind}_{name.split(', ')[1].split()[0]}t_us_per_sample"] = us
        for k in ("interpreter_us_per_sample", "jit_us_per_sample", "c_us_per_sample",
                  "jit_compile_ms"):
            out[k] = otc.get(k)
        print(json.dumps(out))
        return
    print(f"torch_compare: {args.graph}: {len(desc['nodes'])} nodes, batch {desc['batch']}, "
          f"{'training step' if desc['mode'] == 'train' else 'forward'}"
          + (f", {flops:.0f} dense flops per sample" if flops else ""))
    print(f"  {'backend':<28} {'us/sample':>12} {'samples/s':>14}")
    for name, us in list(peers.items()) + list(mine.items()):
        rate = f"   {gflops_text(flops, us * 1e-6, peak)}" if flops else ""
        print(f"  {name:<28} {us:>12.4f} {1e6 / us:>14.0f}{rate}")
    print("  speed over the peers (their time / otc's; above 1: otc is faster):")
    for name, us in mine.items():
        short = (p.replace("pytorch ", "").replace(" threads", "t").replace(" thread", "t")
                 for p in peers)
        print(f"    {name + ':':<20} " + ", ".join(f"{pus / us:.2f}x {peer}"
                                                  for peer, pus in zip(short, peers.values())))


if __name__ == "__main__":
    main()
