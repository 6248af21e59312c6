"""neat-python's XOR script run by otc.neat (`import otc.neat as neat`) and, when importable,
by neat-python itself (`import neat`, or a checkout in NEAT_PYTHON_DIR): whole runs with the
same config and fitness, 20 seeds each, evaluations/s; then the cost of one activate() call
and of activate_batch() per sample. Not a test: prints a table. Times are this process's CPU
time (time.process_time: the runs are single-threaded, so on an idle machine it is the wall
time, and on a shared one it leaves out the time other work had the core); the wall-clock
rate is printed beside it. The two libraries take turns seed by seed (otc.neat REPEATS times
a seed, its runs being short), so on a machine shared with other work both see the same load
and their ratio holds even when the rates move.
Usage: PYTHONPATH=build/python python3 bench/python_neat_xor.py [RUNS [REPEATS]]"""
import importlib
import os
import random
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_timing import median_time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "tests", "neat_python", "configs", "xor_config-feedforward")
XOR = [((0.0, 0.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 0.0), 1.0), ((1.0, 1.0), 0.0)]
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3  # otc.neat's; neat-python's: 1


class Runs:
    """One library's whole runs: evaluations, CPU and wall seconds, failures."""

    def __init__(self, neat):
        self.neat, self.evaluations, self.cpu, self.wall = neat, 0, [], 0.0
        self.evals, self.failures, self.winner, self.config = [], 0, None, None

    def eval_genomes(self, genomes, config):
        neat = self.neat
        for _, genome in genomes:
            net = neat.nn.FeedForwardNetwork.create(genome, config)
            genome.fitness = 4.0 - sum((net.activate(x)[0] - y) ** 2 for x, y in XOR)
            self.evaluations += 1

    def run(self, seed):
        neat = self.neat
        random.seed(seed)
        config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction,
                             neat.DefaultSpeciesSet, neat.DefaultStagnation, CONFIG)
        before = self.evaluations
        t0, w0 = time.process_time(), time.perf_counter()
        winner = neat.Population(config).run(self.eval_genomes, 300)
        self.cpu.append(time.process_time() - t0)
        self.wall += time.perf_counter() - w0
        self.evals.append(self.evaluations - before)
        self.failures += winner is None or winner.fitness < config.fitness_threshold
        self.winner, self.config = winner, config

    def rate(self):
        return sum(self.evals) / sum(self.cpu)

    def report(self, repeats):
        print(f"{self.neat.__name__:10} runs={runs} repeats={repeats} failures={self.failures} "
              f"mean_evaluations={statistics.mean(self.evals):.0f} "
              f"median_run_ms={1000 * statistics.median(self.cpu):.1f} "
              f"evaluations_per_s={self.rate():.0f} (wall {sum(self.evals) / self.wall:.0f})")


def call_costs(neat, winner, config):
    net = neat.nn.FeedForwardNetwork.create(winner, config)
    x = [0.3, 0.7]
    one = median_time(lambda: net.activate(x), clock=time.process_time)
    line = f"{neat.__name__:10} activate_ns={one * 1e9:.0f}"
    if hasattr(net, "activate_batch"):
        batch = np.random.default_rng(0).random((4096, 2), dtype=np.float32)
        per = median_time(lambda: net.activate_batch(batch), clock=time.process_time) / len(batch)
        line += f" activate_batch_ns_per_sample={per * 1e9:.1f} (4096 rows)"
    print(line)


def load_neat_python():
    checkout = os.environ.get("NEAT_PYTHON_DIR")
    if checkout:
        sys.path.insert(0, checkout)
    try:
        return importlib.import_module("neat")
    except ImportError:
        return None


otc_runs = Runs(importlib.import_module("otc.neat"))
neat_python = load_neat_python()
np_runs = Runs(neat_python) if neat_python else None
for seed in range(1, runs + 1):
    for _ in range(repeats):
        otc_runs.run(seed)
    if np_runs:
        np_runs.run(seed)
otc_runs.report(repeats)
if np_runs is None:
    print("neat       not importable (no Debian package; give a checkout in NEAT_PYTHON_DIR)")
else:
    np_runs.report(1)
    print(f"otc.neat / neat = {otc_runs.rate() / np_runs.rate():.1f}x (evaluations per CPU second)")
for r in (otc_runs, np_runs):
    if r:
        call_costs(r.neat, r.winner, r.config)
