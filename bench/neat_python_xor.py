"""neat-python's own XOR (its examples/xor config and fitness 4 - sum of squared errors),
timed the way bench/neat_xor times otc: whole runs in-process, evaluations counted as
population x generations up to the solving one. Not a dependency: give it a checkout.
Usage: python3 bench/neat_python_xor.py NEAT_PYTHON_DIR [RUNS]
Prints one line of key=value figures for bench/neat_vs_neat_python.sh."""
import os
import random
import statistics
import sys
import time

checkout = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
sys.path.insert(0, checkout)
import neat  # noqa: E402

XOR = [((0.0, 0.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 0.0), 1.0), ((1.0, 1.0), 0.0)]
evaluations = 0


def eval_genomes(genomes, config):
    global evaluations
    for _, genome in genomes:
        net = neat.nn.FeedForwardNetwork.create(genome, config)
        genome.fitness = 4.0 - sum((net.activate(x)[0] - y) ** 2 for x, y in XOR)
        evaluations += 1


config_path = os.path.join(checkout, "examples", "xor", "config-feedforward")
times, evals, failures = [], [], 0
for seed in range(1, runs + 1):
    random.seed(seed)
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                         neat.DefaultStagnation, config_path)
    before = evaluations
    t0 = time.perf_counter()
    pop = neat.Population(config)
    winner = pop.run(eval_genomes, 300)
    times.append(time.perf_counter() - t0)
    evals.append(evaluations - before)
    if winner is None or winner.fitness < config.fitness_threshold:
        failures += 1
total = sum(times)
print(f"runs={runs} mean_evaluations={statistics.mean(evals):.0f} failures={failures} "
      f"evaluations_per_s={sum(evals) / total:.0f} median_run_ms={1000 * statistics.median(times):.1f}")
