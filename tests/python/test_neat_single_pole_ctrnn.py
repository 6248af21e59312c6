"""neat-python's single-pole CTRNN example (examples/single-pole-balancing/evolve-ctrnn.py)
with `import otc.neat as neat`: CTRNN.create(genome, config, time_const) and
advance(inputs, time_const, time_const) on this folder's cart-pole. The config is the
example's with 10 simulated seconds to reach instead of 60, to keep the test short."""
import os
import random

import otc.neat as neat
from test_neat_single_pole import DT, FORCE, RUNS_PER_NET, CartPole

CONFIG = os.path.join(os.path.dirname(__file__), "..", "neat_python", "configs",
                      "single-pole-balancing_config-ctrnn")
SIMULATION_SECONDS = 10.0
time_const = DT  # the example advances one simulation step per action


def eval_genome(genome, config):
    net = neat.ctrnn.CTRNN.create(genome, config, time_const)
    rng = random.Random(genome.key)
    fitnesses = []
    for _ in range(RUNS_PER_NET):
        sim = CartPole(rng)
        net.reset()
        while sim.t < SIMULATION_SECONDS:
            action = net.advance(sim.scaled_state(), time_const, time_const)
            sim.step(FORCE if action[0] > 0.5 else -FORCE)
            if sim.failed():
                break
        fitnesses.append(sim.t)
    return min(fitnesses)


def eval_genomes(genomes, config):
    for genome_id, genome in genomes:
        genome.fitness = eval_genome(genome, config)


def test_single_pole_ctrnn_solves(tmp_path):
    text = open(CONFIG, encoding="utf-8").read()
    assert "fitness_threshold   = 60.0" in text
    path = tmp_path / "config-ctrnn"
    path.write_text(text.replace("fitness_threshold   = 60.0", "fitness_threshold   = 10.0"))
    random.seed(3)
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction,
                         neat.DefaultSpeciesSet, neat.DefaultStagnation, str(path))
    pop = neat.Population(config)
    pop.add_reporter(neat.StdOutReporter(True))
    winner = pop.run(eval_genomes, 30)
    assert winner.fitness >= config.fitness_threshold
    # The CTRNN recomputed from scratch scores the same.
    assert eval_genome(winner, config) == winner.fitness
