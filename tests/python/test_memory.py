"""The extension does not leak: the API (models run and trained, sequences, NEAT networks
created and activated, genomes pickled, evolution, and every kind of error) called many times
leaves the process's resident memory flat once warm. Also: long C work releases the GIL."""
import json
import os
import pickle
import random
import sys
import threading
import time

import numpy as np
import pytest

import otc
import otc.neat as neat

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
IRIS = os.path.join(ROOT, "examples", "models", "iris_mlp.otm")
CONFIG = os.path.join(ROOT, "tests", "neat_python", "configs", "xor_config-feedforward")
XOR = [((0.0, 0.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 0.0), 1.0), ((1.0, 1.0), 0.0)]


def rss_kib():
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def raises(fn, *args, **kw):
    with pytest.raises((TypeError, ValueError, otc.OtcError)):
        fn(*args, **kw)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "rnn.json"
    node = {"activation": {"name": "identity", "custom": False}, "bias": 0.0, "response": 1.0}
    path.write_text(json.dumps({"network": {
        "format_version": "1.0", "network_type": "recurrent",
        "topology": {"num_inputs": 1, "num_outputs": 1, "input_keys": [-1], "output_keys": [0]},
        "nodes": [dict(node, id=0, type="output", aggregation={"name": "sum", "custom": False}),
                  dict(node, id=-1, type="input", aggregation={"name": "none", "custom": False})],
        "connections": [{"from": -1, "to": 0, "weight": 0.5, "enabled": True},
                        {"from": 0, "to": 0, "weight": 0.5, "enabled": True}]}}))
    return otc.Model.load(IRIS), otc.Model.import_neat_python(str(path))


def flat_after_warm_up(body, rounds, limit_kib):
    """RSS grows by less than limit_kib over `rounds` calls of body after as many to warm up
    (allocator pools, numpy's caches); a leak of a few hundred bytes a call would not."""
    for i in range(rounds):
        body(i)
    before = rss_kib()
    for i in range(rounds):
        body(i)
    grown = rss_kib() - before
    assert grown < limit_kib, f"RSS grew by {grown} KiB over {rounds} rounds"


def test_models_and_errors_do_not_leak(models):
    iris, rnn = models
    x = np.random.default_rng(0).random((16, 4), dtype=np.float32)
    seqs = [np.ones((3, 1)), np.ones((5, 1))]

    def body(i):
        iris.run(x)
        iris.run(x.astype(np.float64).tolist())
        iris.train(x, np.zeros((16, 3), np.float32), epochs=1, batch=8)
        rnn.run(seqs)
        rnn.run(np.ones((4, 6, 1)))
        rnn.train(seqs, seqs, epochs=1, bptt=2)
        raises(iris.run, np.zeros((2, 3)))
        raises(iris.run, [["a"] * 4])
        raises(iris.train, x, np.zeros((3, 3)))
        raises(rnn.run, [np.ones((2, 1)), np.ones((2, 2))])
        raises(rnn.train, seqs, [np.ones((3, 1))])
        raises(otc.Model.load, "/nonexistent.otm")
    flat_after_warm_up(body, 1000, 256)


def test_networks_genomes_and_evolution_do_not_leak():
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                         neat.DefaultStagnation, CONFIG)
    random.seed(1)
    pop = neat.Population(config)

    def fitness(genomes, config):
        for _, g in genomes:
            net = neat.nn.FeedForwardNetwork.create(g, config)
            g.fitness = 4.0 - sum((net.activate(x)[0] - y) ** 2 for x, y in XOR)
    genome = pop.run(fitness, 2)
    batch = np.ones((8, 2))

    def body(i):
        net = neat.nn.FeedForwardNetwork.create(genome, config)
        net.activate([0.5, 0.25])
        net.activate((1, 0))
        net.activate_batch(batch)
        raises(net.activate, [1.0])
        raises(net.activate, ["a", 1.0])
        raises(neat.nn.FeedForwardNetwork.create, genome, None)
        rec = neat.nn.RecurrentNetwork.create(genome, config)
        rec.activate([1.0, 0.0])
        rec.reset()
        ct = neat.ctrnn.CTRNN.create(genome, config, 0.5)
        ct.advance([1.0, 1.0], 0.1, 0.05)
        pickle.loads(pickle.dumps(genome))
        len(genome.nodes) + len(genome.connections)
        otc.Model.from_genome(genome, config)
        if i % 50 == 0:
            random.seed(i)
            neat.Population(config).run(fitness, 2)
    flat_after_warm_up(body, 1000, 256)


def test_training_releases_the_gil(models):
    """Another Python thread runs while train() works in C. With a huge switch interval the
    main thread never hands the GIL over by itself, so the other thread can only count while
    the extension has released it."""
    iris, _ = models
    x = np.random.default_rng(1).random((2048, 4), dtype=np.float32)
    y = np.zeros((2048, 3), np.float32)
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.0001)  # lets the main thread take the GIL back
    interval = sys.getswitchinterval()
    t = threading.Thread(target=count)
    t.start()
    try:
        time.sleep(0.01)  # the thread is counting
        sys.setswitchinterval(1000)
        before = ticks[0]
        iris.train(x, y, epochs=20)
        during = ticks[0] - before
    finally:
        sys.setswitchinterval(interval)
        done.set()
        t.join()
    assert during > 0  # a pure Python loop in its place counts 0
