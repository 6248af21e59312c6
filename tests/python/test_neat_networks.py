"""otc.neat's networks against a reference written here from neat-python's documented
semantics (RecurrentNetwork: one synchronous step per activate, every node reading the
previous step's values), CTRNN's calling rules, and neat-python's exceptions."""
import math
import os
import random

import pytest

import otc.neat as neat

CONFIG = os.path.join(os.path.dirname(__file__), "..", "neat_python", "configs",
                      "xor_config-feedforward")


def config_with(tmp_path, **keys):
    """The XOR config with some keys changed."""
    lines = []
    for line in open(CONFIG, encoding="utf-8"):
        name = line.split("=")[0].strip()
        lines.append(f"{name} = {keys.pop(name)}\n" if name in keys else line)
    assert not keys, keys
    path = tmp_path / "config"
    path.write_text("".join(lines), encoding="utf-8")
    return neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                       neat.DefaultStagnation, str(path))


def sigmoid(z):  # neat-python's sigmoid_activation
    z = max(-60.0, min(60.0, 5.0 * z))
    return 1.0 / (1.0 + math.exp(-z))


def reference_recurrent(genome, config, sequence):
    """neat-python's RecurrentNetwork over a sequence, from the genome's gene dicts."""
    nodes = genome.nodes
    links = {k: [] for k in nodes}
    for (i, o), c in genome.connections.items():
        if c.enabled:
            links[o].append((i, c.weight))
    values = {k: 0.0 for k in nodes}
    out = []
    for inputs in sequence:
        for j, v in enumerate(inputs):
            values[-j - 1] = v
        new = {}
        for k, n in nodes.items():
            assert n.activation == "sigmoid" and n.aggregation == "sum"
            s = sum(values[i] * w for i, w in links[k])
            new[k] = sigmoid(n.bias + n.response * s)
        values.update(new)
        out.append([values[k] for k in config.genome_config.output_keys])
    return out


def evolved_genomes(config, generations=5):
    random.seed(7)
    p = neat.Population(config)

    def eval_genomes(genomes, config):
        for _, g in genomes:
            g.fitness = random.random()

    p.run(eval_genomes, generations)
    return list(p.population.values())


def test_recurrent_network_matches_reference(tmp_path):
    config = config_with(tmp_path, feed_forward="False", node_add_prob="0.5")
    rng = random.Random(1)
    sequence = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(6)]
    checked = 0
    for genome in evolved_genomes(config):
        net = neat.nn.RecurrentNetwork.create(genome, config)
        want = reference_recurrent(genome, config, sequence)
        for _ in range(2):  # and again after a reset
            got = [net.activate(x) for x in sequence]
            for g, w in zip(got, want):
                assert g == pytest.approx(w, rel=1e-5, abs=1e-6)
            net.reset()
        checked += len(genome.nodes) > 1
    assert checked > 0  # some genomes had hidden nodes


def test_ctrnn_advance(tmp_path):
    config = config_with(tmp_path)
    genome = evolved_genomes(config, 1)[0]
    net = neat.ctrnn.CTRNN.create(genome, config, 0.05)
    first = [net.advance([0.5, -0.5], 0.02, 0.01) for _ in range(5)]
    with pytest.raises(ValueError, match="cannot change between resets"):
        net.advance([0.5, -0.5], 0.03, 0.01)
    net.reset()
    assert [net.advance([0.5, -0.5], 0.02, 0.01) for _ in range(5)] == first
    # The state moves towards the node's steady value: outputs change from step to step.
    assert first[0] != first[-1]
    with pytest.raises(ValueError, match="time_constant"):
        neat.ctrnn.CTRNN.create(genome, config, -1.0)


def test_complete_extinction_raises(tmp_path):
    config = config_with(tmp_path, max_stagnation="1", species_elitism="0")

    def constant(genomes, config):
        for _, g in genomes:
            g.fitness = 1.0

    p = neat.Population(config)
    with pytest.raises(neat.CompleteExtinctionException):
        p.run(constant, 50)


def test_bad_fitness_and_failing_function(tmp_path):
    config = config_with(tmp_path)

    def unset(genomes, config):
        pass

    with pytest.raises(ValueError, match="fitness"):
        neat.Population(config).run(unset, 1)

    def raises(genomes, config):
        raise KeyError("from the fitness function")

    with pytest.raises(KeyError, match="from the fitness function"):
        neat.Population(config).run(raises, 1)
    with pytest.raises(Exception, match="No such config file"):
        neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                    neat.DefaultStagnation, str(tmp_path / "missing"))
    bad = tmp_path / "bad"
    bad.write_text("[NEAT]\npop_size = -3\n", encoding="utf-8")
    with pytest.raises(Exception, match="pop_size"):
        neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                    neat.DefaultStagnation, str(bad))


def test_population_refuses_reentry(tmp_path):
    config = config_with(tmp_path)
    p = neat.Population(config)

    def reenter(genomes, config):
        p._pop.genomes()  # the population is busy stepping

    with pytest.raises(RuntimeError, match="in use"):
        p.run(reenter, 1)


def test_threaded_evaluator_scores_every_genome(tmp_path):
    config = config_with(tmp_path)

    def eval_genome(genome, config):
        net = neat.nn.FeedForwardNetwork.create(genome, config)
        return net.activate([1.0, 0.0])[0]

    p = neat.Population(config)
    seen = []
    te = neat.ThreadedEvaluator(3, eval_genome)

    def evaluate(genomes, config):
        te.evaluate(genomes, config)
        for _, g in genomes:  # each fitness is its own network's output
            assert g.fitness == eval_genome(g, config)
        seen.extend(g for _, g in genomes)

    p.run(evaluate, 2)
    te.stop()
    assert len(seen) >= config.pop_size


def test_keys_as_neat_python_gives_them(tmp_path):
    """A key names one genome for the whole run: the first generation is 1..pop_size, every
    new genome gets the next key, and an elite keeps its key and genes (neat-python's rules
    evaluate it again, so it is scored with the others)."""
    config = config_with(tmp_path, elitism="2")
    random.seed(3)
    p = neat.Population(config)
    assert sorted(p.population) == list(range(1, config.pop_size + 1))
    genes, last = {}, 0

    def eval_genomes(genomes, config):
        assert {key for key, _ in genomes} == set(p.population)
        for key, g in genomes:
            assert key == g.key
            g.fitness = random.random()

    for _ in range(6):
        before = set(p.population)
        last = max(before)
        p.run(eval_genomes, 1)
        kept = before & set(p.population)
        assert kept  # elites carried over under their keys
        assert all(k > last for k in set(p.population) - kept)
        for k, g in p.population.items():
            shape = (sorted(g.nodes), sorted(g.connections),
                     [c.weight for _, c in sorted(g.connections.items())])
            assert genes.setdefault(k, shape) == shape


def seeded_fitness(genome, config):  # module level: the worker processes unpickle it
    return random.random()


@pytest.mark.parametrize("workers", [1, 2])
def test_parallel_evaluator_seed_as_neat_python(tmp_path, workers):
    """seed=S: each genome's evaluation starts Python's random from S + genome.key, in a
    worker process or (1 worker) in this one, whose own stream it leaves alone."""
    config = config_with(tmp_path)
    genomes = list(neat.Population(config).population.items())[:6]
    random.seed(11)
    expect_next = random.Random(11).random()
    with neat.ParallelEvaluator(workers, seeded_fitness, seed=100) as pe:
        pe.evaluate(genomes, config)
    for key, g in genomes:
        assert g.fitness == random.Random(100 + key).random()
    if workers == 1:
        assert random.random() == expect_next
