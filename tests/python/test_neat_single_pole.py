"""neat-python's single-pole example (examples/single-pole-balancing/evolve-feedforward.py)
with `import neat` replaced by `import otc.neat as neat`, and a cart-pole of its own written
here: a feed-forward network must balance the pole for the config's 60 simulated seconds
from several random starts. The ParallelEvaluator scores the genomes, as in the example."""
import math
import os
import random

import otc.neat as neat

CONFIG = os.path.join(os.path.dirname(__file__), "..", "neat_python", "configs",
                      "single-pole-balancing_config-feedforward")

GRAVITY, CART_MASS, POLE_MASS, HALF_LENGTH = 9.8, 1.0, 0.1, 0.5
FORCE, DT = 10.0, 0.01
X_LIMIT, THETA_LIMIT = 2.4, math.radians(45)
SIMULATION_SECONDS, RUNS_PER_NET = 60.0, 5


class CartPole:
    """A cart-pole (point-mass cart, uniform pole) integrated with leapfrog steps of DT."""

    def __init__(self, rng):
        self.x = rng.uniform(-0.5 * X_LIMIT, 0.5 * X_LIMIT)
        self.theta = rng.uniform(-0.5 * THETA_LIMIT, 0.5 * THETA_LIMIT)
        self.dx = rng.uniform(-1.0, 1.0)
        self.dtheta = rng.uniform(-1.0, 1.0)
        self.t = 0.0
        self.xacc, self.tacc = 0.0, 0.0

    def accelerations(self, force):
        total = CART_MASS + POLE_MASS
        s, c = math.sin(self.theta), math.cos(self.theta)
        tmp = (force + POLE_MASS * HALF_LENGTH * self.dtheta ** 2 * s) / total
        tacc = (GRAVITY * s - c * tmp) / (HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * c * c / total))
        xacc = tmp - POLE_MASS * HALF_LENGTH * tacc * c / total
        return xacc, tacc

    def step(self, force):
        self.x += self.dx * DT + 0.5 * self.xacc * DT * DT
        self.theta += self.dtheta * DT + 0.5 * self.tacc * DT * DT
        xacc, tacc = self.accelerations(force)
        self.dx += 0.5 * (self.xacc + xacc) * DT
        self.dtheta += 0.5 * (self.tacc + tacc) * DT
        self.xacc, self.tacc = xacc, tacc
        self.t += DT

    def scaled_state(self):
        return [0.5 * (self.x + X_LIMIT) / X_LIMIT, (self.dx + 0.75) / 1.5,
                0.5 * (self.theta + THETA_LIMIT) / THETA_LIMIT, (self.dtheta + 1.0) / 2.0]

    def failed(self):
        return abs(self.x) >= X_LIMIT or abs(self.theta) >= THETA_LIMIT


def eval_genome(genome, config):
    """Worst balancing time over RUNS_PER_NET random starts (seeded by the genome's key, so
    the serial and parallel evaluations agree)."""
    net = neat.nn.FeedForwardNetwork.create(genome, config)
    rng = random.Random(genome.key)
    fitnesses = []
    for _ in range(RUNS_PER_NET):
        sim = CartPole(rng)
        while sim.t < SIMULATION_SECONDS:
            action = net.activate(sim.scaled_state())
            sim.step(FORCE if action[0] > 0.5 else -FORCE)
            if sim.failed():
                break
        fitnesses.append(sim.t)
    return min(fitnesses)


def eval_genomes(genomes, config):
    for genome_id, genome in genomes:
        genome.fitness = eval_genome(genome, config)


def run(workers, seed):
    random.seed(seed)
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction,
                         neat.DefaultSpeciesSet, neat.DefaultStagnation, CONFIG)
    pop = neat.Population(config)
    stats = neat.StatisticsReporter()
    pop.add_reporter(stats)
    pop.add_reporter(neat.StdOutReporter(True))
    if workers:
        pe = neat.ParallelEvaluator(workers, eval_genome)
        try:
            winner = pop.run(pe.evaluate, 30)
        finally:
            pe.close()
    else:
        winner = pop.run(eval_genomes, 30)
    return config, winner


def check_winner(config, winner):
    assert winner.fitness >= config.fitness_threshold
    # Balances from starts it was not scored on, too, for at least 10 s.
    net = neat.nn.FeedForwardNetwork.create(winner, config)
    rng = random.Random(12345)
    sim = CartPole(rng)
    while sim.t < 10.0 and not sim.failed():
        action = net.activate(sim.scaled_state())
        sim.step(FORCE if action[0] > 0.5 else -FORCE)
    assert not sim.failed()


def test_single_pole_parallel_evaluator_solves():
    config, winner = run(2, 2)
    check_winner(config, winner)
    # The fitness a worker process computed is what this process computes.
    assert eval_genome(winner, config) == winner.fitness
