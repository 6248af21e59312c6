#!/usr/bin/env python3
"""PyTorch eager's side of bench/recurrent.c: the same recurrent layers, timed the same way.

    python3 bench/recurrent_torch.py CELL IN HIDDEN STEPS BATCH [CELL IN HIDDEN STEPS BATCH ...]
        [--threads 1,2] [--cpu]

For each configuration and thread count, one line "cell in hidden steps batch threads
train_ms infer_us": a training step (torch.nn.LSTM/GRU over the whole sequence, MSE against a
target at every step, backward through time, Adam) in milliseconds, and batch-1 inference of
one time step (the layer on one step, its state carried) in microseconds, each the median of
timed blocks; then the same for TorchScript, "ts cell in hidden steps batch threads train_ms
infer_us": the layer traced for the training step, traced, frozen and optimised for inference
for the step (bench/torch_peers.py). --cpu times the calling thread's CPU time
(time.thread_time) instead of wall time, at one thread, for a machine shared with other work
(run it with OPENBLAS_NUM_THREADS=1 so that BLAS computes on that thread too, as
bench/recurrent.c does). Exits 77 when torch is missing (bench/recurrent.c then leaves its
columns out).
"""
import sys
import time

from bench_timing import median_time
from torch_peers import torchscript_inference, torchscript_training

try:
    import torch
except ImportError:
    sys.exit(77)


def bench(cell, n_in, hidden, steps, batch, script, clock):
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell]
    torch.manual_seed(1)
    net = cls(n_in, hidden, batch_first=False)
    x = torch.rand(steps, batch, n_in) * 2 - 1
    target = torch.rand(steps, batch, hidden) * 2 - 1
    train_net = torchscript_training(torch, net, (x,)) if script else net
    opt = torch.optim.Adam(train_net.parameters(), lr=1e-3)

    def train_step():
        opt.zero_grad()
        out, _ = train_net(x)
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        opt.step()

    train = median_time(train_step, clock=clock)

    x1 = torch.rand(1, 1, n_in) * 2 - 1
    h0 = torch.zeros(1, 1, hidden)
    state = [(h0, h0.clone()) if cell == "lstm" else h0]
    infer_net = torchscript_inference(torch, net, (x1, state[0])) if script else net

    def infer_step():
        _, state[0] = infer_net(x1, state[0])

    with torch.no_grad():
        infer = median_time(infer_step, clock=clock)
    return train * 1e3, infer * 1e6


def main(argv):
    threads = [1, 2]
    clock = time.perf_counter
    if "--cpu" in argv:
        argv.remove("--cpu")
        threads = [1]
        clock = time.thread_time
    if "--threads" in argv:
        i = argv.index("--threads")
        threads = [int(t) for t in argv[i + 1].split(",")]
        del argv[i : i + 2]
    if len(argv) % 5:
        sys.exit(__doc__)
    for k in range(0, len(argv), 5):
        cell = argv[k]
        n_in, hidden, steps, batch = (int(v) for v in argv[k + 1 : k + 5])
        for th in threads:
            torch.set_num_threads(th)
            for script in (False, True):
                train_ms, infer_us = bench(cell, n_in, hidden, steps, batch, script, clock)
                print(*(["ts"] if script else []), cell, n_in, hidden, steps, batch, th,
                      f"{train_ms:.4f}", f"{infer_us:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
