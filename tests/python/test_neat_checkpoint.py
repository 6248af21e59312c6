"""neat-python's checkpoint example (examples/xor/evolve-feedforward.py's restore step) with
`import otc.neat as neat`: a run checkpointed, restored, and continued; a restored run
continues exactly as the original did; a damaged checkpoint is refused with a message."""
import os
import random

import pytest

import otc
import otc.neat as neat

CONFIG = os.path.join(os.path.dirname(__file__), "..", "neat_python", "configs",
                      "xor_config-feedforward")
xor_inputs = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
xor_outputs = [(0.0,), (1.0,), (1.0,), (0.0,)]


def eval_genomes(genomes, config):
    for genome_id, genome in genomes:
        genome.fitness = 4.0
        net = neat.nn.FeedForwardNetwork.create(genome, config)
        for xi, xo in zip(xor_inputs, xor_outputs):
            output = net.activate(xi)
            genome.fitness -= (output[0] - xo[0]) ** 2


class Recorder(neat.BaseReporter):
    def __init__(self):
        self.best = []

    def post_evaluate(self, config, population, species, best_genome):
        self.best.append(best_genome.fitness)


def test_checkpoint_restore_continues_the_run(tmp_path):
    random.seed(3)
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction,
                         neat.DefaultSpeciesSet, neat.DefaultStagnation, CONFIG)
    p = neat.Population(config)
    rec = Recorder()
    p.add_reporter(rec)
    prefix = str(tmp_path / "neat-checkpoint-")
    p.add_reporter(neat.Checkpointer(5, None, filename_prefix=prefix))
    p.run(eval_genomes, 10)
    assert os.path.exists(prefix + "4") and os.path.exists(prefix + "9")

    # neat-python's example: restore and run 10 more generations.
    p2 = neat.Checkpointer.restore_checkpoint(prefix + "4")
    assert p2.generation == 5
    rec2 = Recorder()
    p2.add_reporter(rec2)
    p2.run(eval_genomes, 5)
    # The same generations 5..9 as the uninterrupted run: otc's checkpoint holds the
    # random state as well.
    assert rec2.best == rec.best[5:10]
    winner = p2.run(eval_genomes, 300)
    assert winner.fitness is not None


def test_damaged_checkpoint_is_refused(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a checkpoint\n")
    with pytest.raises(ValueError, match="not an otc.neat checkpoint"):
        neat.Checkpointer.restore_checkpoint(str(bad))
    text = open(CONFIG, "rb").read()
    bad.write_bytes(b"otc-neat-python-checkpoint 1 %d 1\n" % len(text) + text + b"{\"x\": 1}")
    with pytest.raises(otc.OtcError, match="bad"):
        neat.Checkpointer.restore_checkpoint(str(bad))
