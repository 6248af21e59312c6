#!/usr/bin/env python3
"""numpy's side of bench/hyperneat.c: the same CPPN (tanh(gauss(4(x1-x2)) + gauss(4(y1-y2))
- 0.5), gauss(x) = exp(-x^2)) painted onto the same 11x11 and 33x33 substrates with the same
threshold and scaling (0.2, 3.0), timed the same way, and the visual task's fitness worked out
independently (75 trials, fitness the mean of max(0, 30 - squared distance in 11x11 cells)).

    python3 bench/hyperneat_numpy.py [SECONDS]

Exits 77 when numpy is missing."""
import sys

from bench_timing import median_time

try:
    import numpy as np
except ImportError:
    sys.exit(77)


def coords(side):
    c = (2 * np.arange(side, dtype=np.float32) + 1) / side - 1
    x, y = np.meshgrid(c, c)  # node index row * side + col
    return x.ravel(), y.ravel()


def paint(side):
    x, y = coords(side)
    dx = x[None, :] - x[:, None]  # [target, source]
    dy = y[None, :] - y[:, None]
    w = np.tanh(np.exp(-(4 * dx) ** 2) + np.exp(-(4 * dy) ** 2) - 0.5)
    w = np.clip(w, -1, 1)
    a = np.abs(w)
    return np.where(a <= 0.2, 0, np.sign(w) * (a - 0.2) / 0.8 * 3.0).astype(np.float32)


def trials(k):
    side = 11 * k
    xs, targets = [], []
    for pos in range(25):
        sx, sy = 1 + 2 * (pos % 5), 1 + 2 * (pos // 5)
        for dx, dy in ((5, 0), (0, 5), (5, 5)):
            lx = min(max((sx + dx) % 11, 1), 9)
            ly = min(max((sy + dy) % 11, 1), 9)
            img = np.zeros((side, side), np.float32)
            img[sy * k:(sy + 1) * k, sx * k:(sx + 1) * k] = 1
            img[(ly - 1) * k:(ly + 2) * k, (lx - 1) * k:(lx + 2) * k] = 1
            xs.append(img.ravel())
            targets.append((lx, ly))
    return np.array(xs), np.array(targets, np.float64)


def fitness(w, k):
    x, targets = trials(k)
    best = np.argmax(x @ w.T, axis=1)
    side = 11 * k
    cx, cy = coords(side)
    px = (cx[best] + 1) * 11 / 2 - (targets[:, 0] + 0.5)
    py = (cy[best] + 1) * 11 / 2 - (targets[:, 1] + 0.5)
    return np.mean(np.maximum(0, 30 - (px * px + py * py)))


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    print("%-8s %12s %10s %14s %14s %12s %10s" % ("field", "connections", "paint ms",
                                                 "rows/s (b=1)", "rows/s (b=75)",
                                                 "visual ev/s", "fitness"))
    for k in (1, 3):
        side = 11 * k
        n = side * side
        w = paint(side)
        b = np.zeros(n, np.float32)
        x1 = (np.arange(n) * 7919 % 5 == 0).astype(np.float32)[None, :]
        x75 = np.repeat(x1, 75, axis=0)
        tp = median_time(lambda: paint(side), seconds)
        t1 = median_time(lambda: x1 @ w.T + b, seconds)
        t75 = median_time(lambda: x75 @ w.T + b, seconds)
        tv = median_time(lambda: fitness(paint(side), k), seconds)
        print("%2dx%-5d %12d %10.3f %14.0f %14.0f %12.1f %10.3f" %
              (side, side, n * n, tp * 1e3, 1 / t1, 75 / t75, 1 / tv, fitness(w, k)))


if __name__ == "__main__":
    main()
