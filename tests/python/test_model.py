"""otc.Model from Python: neat-python networks imported and run against neat-python's own
outputs (the fixtures), .otm round trips, training checked against numpy, C emission, the
JIT, a NEAT winner as a Model, and errors that name the argument."""
import glob
import json
import os

import numpy as np
import pytest

import otc
import otc.neat as neat

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "neat_python")
IRIS = os.path.join(HERE, "..", "..", "examples", "models", "iris_mlp.otm")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


def outputs_2d(out):
    return np.hstack(out) if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", ["feedforward_101_000.json", "feedforward_101_007.json",
                                  "xor_champion_101_0.json"])
def test_feedforward_import_matches_neat_python(name):
    d = fixture(name)
    m = otc.Model.import_neat_python(os.path.join(FIXTURES, name))
    y = outputs_2d(m.run(np.array(d["inputs"], dtype=np.float32)))
    want = np.array(d["outputs"])
    assert y.shape == want.shape
    assert np.allclose(y, want, rtol=1e-4, atol=1e-4)


def test_recurrent_import_runs_sequences():
    d = fixture("recurrent_101_000.json")
    m = otc.Model.import_neat_python(os.path.join(FIXTURES, "recurrent_101_000.json"))
    assert m.recurrent
    x = np.array([d["inputs"]], dtype=np.float32)  # one sequence: [1, steps, inputs]
    y = outputs_2d(m.run(x))
    assert y.shape[:2] == (1, len(d["inputs"]))
    assert np.allclose(y.reshape(len(d["inputs"]), -1), np.array(d["outputs"]), rtol=1e-3,
                       atol=1e-3)
    one = outputs_2d(m.run(x[0]))  # [steps, inputs]: the same sequence
    assert np.array_equal(one, y.reshape(len(d["inputs"]), -1))
    with pytest.raises(ValueError, match="X: expected"):
        m.run(x[None])


def test_save_load_round_trip(tmp_path):
    m = otc.Model.load(IRIS)
    x = np.random.default_rng(0).random((7, m.inputs), dtype=np.float32)
    path = str(tmp_path / "m.otm")
    m.save(path)
    assert np.array_equal(otc.Model.load(path).run(x), m.run(x))


def test_train_loss_is_numpys_and_falls():
    m = otc.Model.load(IRIS)
    rng = np.random.default_rng(1)
    x = rng.random((60, 4), dtype=np.float32)
    y = (x[:, :3] * 2.0 - 0.5).astype(np.float32)  # a target the MLP can fit
    before = m.run(x)
    # Full-batch: the first epoch's loss is the untrained model's MSE, computed here by numpy.
    losses = m.train(x, y, epochs=200, batch=60, lr=0.01, optimizer="adam")
    assert len(losses) == 200
    assert abs(losses[0] - float(np.mean((before - y) ** 2))) < 1e-5 * max(1.0, losses[0])
    after = float(np.mean((m.run(x) - y) ** 2))
    assert after < 0.2 * losses[0]
    # Training leaves the graph as it was (the loss nodes come off): it still saves and loads.
    assert m.outputs == 1


def test_compile_emit_c(tmp_path):
    m = otc.Model.load(IRIS)
    files = m.compile(emit_c=str(tmp_path), name="iris")
    assert [os.path.basename(f) for f in files] == ["iris.h", "iris.c"]
    assert "iris_forward" in open(files[0], encoding="utf-8").read()
    with pytest.raises(ValueError, match="name"):
        m.compile(emit_c=str(tmp_path), name="not a name")


def test_jit_matches_interpreter():
    m = otc.Model.load(IRIS)
    x = np.random.default_rng(2).random((9, 4), dtype=np.float32)
    want = m.run(x)
    try:
        m.jit()
    except otc.OtcError as e:
        pytest.skip(f"no LLVM JIT here: {e}")
    assert m.backend == "jit"
    assert np.allclose(m.run(x), want, rtol=1e-5, atol=1e-6)


def test_inputs_converted_or_refused_by_name():
    m = otc.Model.load(IRIS)
    x = np.random.default_rng(3).random((5, 4))
    want = m.run(x.astype(np.float32))
    assert np.array_equal(m.run(x), want)  # float64 converted
    assert np.array_equal(m.run(np.asfortranarray(x)), want)  # not C-contiguous
    assert np.array_equal(m.run(x.tolist()), want)  # a list
    with pytest.raises(ValueError, match=r"X: expected shape \[batch, 4\]"):
        m.run(np.zeros((5, 3), np.float32))
    with pytest.raises(ValueError, match="X: expected a 2-D array"):
        m.run(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="X: expected a numeric array"):
        m.run(np.array([["a"] * 4]))
    with pytest.raises(TypeError, match="X"):
        m.run(object())
    with pytest.raises(ValueError, match="y: expected shape"):
        m.train(x, np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="optimizer"):
        m.train(x, np.zeros((5, 3), np.float32), optimizer="rmsprop")
    with pytest.raises(otc.OtcError, match="nope.otm"):
        otc.Model.load("/nonexistent/nope.otm")
    with pytest.raises(TypeError):
        otc.Model.load(None)


def test_neat_winner_as_model_and_activate_batch():
    config = neat.Config(neat.DefaultGenome, neat.DefaultReproduction, neat.DefaultSpeciesSet,
                         neat.DefaultStagnation,
                         os.path.join(FIXTURES, "configs", "xor_config-feedforward"))
    p = neat.Population(config)

    def eval_genomes(genomes, config):
        for _, g in genomes:
            g.fitness = 1.0

    winner = p.run(eval_genomes, 1)
    net = neat.nn.FeedForwardNetwork.create(winner, config)
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    one_by_one = np.array([net.activate(row) for row in x.tolist()], np.float32)
    assert np.array_equal(net.activate_batch(x), one_by_one)
    m = otc.Model.from_genome(winner, config)
    assert np.allclose(m.run(x), one_by_one, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="inputs: expected 2 values"):
        net.activate([1.0])
    with pytest.raises(TypeError, match=r"inputs\[1\]"):
        net.activate([1.0, "x"])
    with pytest.raises(TypeError, match="fitness"):
        winner.fitness = "high"
