"""What otc's Python package adds to neat-python's API: a run scored by one of otc's tasks in C
threads (no Python in the loop), and a model written as ONNX."""
import os
import random

import numpy as np
import pytest

import otc
import otc.neat as neat

HERE = os.path.dirname(__file__)
XOR_CONFIG = os.path.join(HERE, "..", "neat_python", "configs", "xor_config-feedforward")
IRIS = os.path.join(HERE, "..", "..", "examples", "models", "iris_mlp.otm")
XOR = [((0.0, 0.0), 0.0), ((0.0, 1.0), 1.0), ((1.0, 0.0), 1.0), ((1.0, 1.0), 0.0)]


def config():
    return neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                       neat.DefaultStagnation, XOR_CONFIG)


def xor_task_run(threads):
    random.seed(3)  # the population's seed comes from Python's random, as in neat-python
    c = config()
    p = neat.Population(c)
    winner = p.run("xor:neat-python", 300, threads=threads)
    return c, p, winner


def test_task_run_solves_xor_in_c_threads():
    c, p, winner = xor_task_run(2)
    assert winner.fitness >= c.fitness_threshold
    # the fitness is neat-python's XOR score, recomputed here from the winner's network
    net = neat.nn.FeedForwardNetwork.create(winner, c)
    score = 4.0 - sum((net.activate(x)[0] - y) ** 2 for x, y in XOR)
    assert abs(score - winner.fitness) < 1e-5


def test_task_run_same_on_any_thread_count():
    _, p1, w1 = xor_task_run(1)
    _, p2, w2 = xor_task_run(2)
    assert p1.generation == p2.generation
    assert w1.fitness == w2.fitness
    assert sorted(w1.connections) == sorted(w2.connections)


def test_task_run_errors():
    p = neat.Population(config())
    with pytest.raises(otc.OtcError, match="nosuchtask"):
        p.run("nosuchtask", 1)
    with pytest.raises(ValueError, match="threads"):
        p.run("xor:neat-python", 1, threads=0)
    with pytest.raises(ValueError, match="threads"):
        p.run(lambda genomes, config: None, 1, threads=2)


# numpy spellings of the ONNX operators (from the ONNX operator specification) an exported MLP
# uses: an evaluator independent of otc.
ONNX_OPS = {
    "MatMul": lambda a, b: a @ b,
    "Add": lambda a, b: a + b,
    "Shape": lambda a: np.array(a.shape, dtype=np.int64),
    "Expand": lambda a, shape: a * np.ones(tuple(shape), dtype=a.dtype),
    "Greater": lambda a, b: a > b,
    "Where": lambda c, a, b: np.where(c, a, b),
}


def test_export_onnx_runs_as_the_model(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    m = otc.Model.load(IRIS)
    path = str(tmp_path / "iris.onnx")
    m.export_onnx(path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    x = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [-1, 0, 1e3, 7]], dtype=np.float32)
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env[model.graph.input[0].name] = x
    for node in model.graph.node:
        assert node.op_type in ONNX_OPS, node.op_type
        env[node.output[0]] = ONNX_OPS[node.op_type](*[env[i] for i in node.input])
    got = env[model.graph.output[0].name]
    assert np.allclose(got, m.run(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(otc.OtcError):
        m.export_onnx(str(tmp_path / "no_such_dir" / "x.onnx"))
