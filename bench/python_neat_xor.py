"""neat-python's XOR script run by otc.neat (`import otc.neat as neat`) and, when importable,
by neat-python itself (`import neat`, or a checkout in NEAT_PYTHON_DIR): whole runs with the
same config and fitness, 20 seeds each, evaluations/s; then the cost of one activate() call
and of activate_batch() per sample. Not a test: prints a table. Times are this process's CPU
time (time.process_time: the runs are single-threaded, so on an idle machine it is the wall
time, and on a shared one it leaves out the time other work had the core); the wall-clock
rate is printed beside it.
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
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5  # otc.neat's; neat-python's: 1


def whole_runs(neat, repeats):
    """The runs of every seed, `repeats` times over: the median evaluations per CPU second of
    the repeats (and their range), so that a burst of other work on a shared machine shows
    as spread instead of moving the figure."""
    evaluations = 0

    def eval_genomes(genomes, config):
        nonlocal evaluations
        for _, genome in genomes:
            net = neat.nn.FeedForwardNetwork.create(genome, config)
            genome.fitness = 4.0 - sum((net.activate(x)[0] - y) ** 2 for x, y in XOR)
            evaluations += 1

    rates, walls, winner, config = [], [], None, None
    for _ in range(repeats):
        times, wall, evals, failures = [], 0.0, [], 0
        for seed in range(1, runs + 1):
            random.seed(seed)
            config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction,
                                 neat.DefaultSpeciesSet, neat.DefaultStagnation, CONFIG)
            before = evaluations
            t0, w0 = time.process_time(), time.perf_counter()
            winner = neat.Population(config).run(eval_genomes, 300)
            times.append(time.process_time() - t0)
            wall += time.perf_counter() - w0
            evals.append(evaluations - before)
            failures += winner is None or winner.fitness < config.fitness_threshold
        rates.append(sum(evals) / sum(times))
        walls.append(sum(evals) / wall)
    print(f"{neat.__name__:10} runs={runs} failures={failures} "
          f"mean_evaluations={statistics.mean(evals):.0f} "
          f"median_run_ms={1000 * statistics.median(times):.1f} "
          f"evaluations_per_s={statistics.median(rates):.0f} "
          f"(repeats={repeats}: {min(rates):.0f}..{max(rates):.0f}; "
          f"wall {statistics.median(walls):.0f})")
    return winner, config


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


otc_neat = importlib.import_module("otc.neat")
results = [(otc_neat, whole_runs(otc_neat, repeats))]
neat_python = load_neat_python()
if neat_python is None:
    print("neat       not importable (no Debian package; give a checkout in NEAT_PYTHON_DIR)")
else:
    results.append((neat_python, whole_runs(neat_python, 1)))
for module, (winner, config) in results:
    call_costs(module, winner, config)
