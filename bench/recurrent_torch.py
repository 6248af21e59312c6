#!/usr/bin/env python3
"""PyTorch eager's side of bench/recurrent.c: the same recurrent layers, timed the same way.

    python3 bench/recurrent_torch.py CELL IN HIDDEN STEPS BATCH [CELL IN HIDDEN STEPS BATCH ...]
        [--threads 1,2]

For each configuration and thread count, one line "cell in hidden steps batch threads
train_ms infer_us": a training step (torch.nn.LSTM/GRU over the whole sequence, MSE against a
target at every step, backward through time, Adam) in milliseconds, and batch-1 inference of
one time step (the layer on one step, its state carried) in microseconds, each the median of
timed blocks. Exits 77 when torch is missing (bench/recurrent.c then leaves its columns out).
"""
import sys

from bench_timing import median_time

try:
    import torch
except ImportError:
    sys.exit(77)


def bench(cell, n_in, hidden, steps, batch):
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell]
    torch.manual_seed(1)
    net = cls(n_in, hidden, batch_first=False)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.rand(steps, batch, n_in) * 2 - 1
    target = torch.rand(steps, batch, hidden) * 2 - 1

    def train_step():
        opt.zero_grad()
        out, _ = net(x)
        loss = torch.nn.functional.mse_loss(out, target)
        loss.backward()
        opt.step()

    train = median_time(train_step)

    x1 = torch.rand(1, 1, n_in) * 2 - 1
    state = [None]

    def infer_step():
        _, state[0] = net(x1, state[0])

    with torch.no_grad():
        infer = median_time(infer_step)
    return train * 1e3, infer * 1e6


def main(argv):
    threads = [1, 2]
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
            train_ms, infer_us = bench(cell, n_in, hidden, steps, batch)
            print(cell, n_in, hidden, steps, batch, th, f"{train_ms:.4f}", f"{infer_us:.3f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
