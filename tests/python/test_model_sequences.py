"""otc.Model on sequences for a recurrent model: run on one sequence, a batch and a list of
sequences (each from a reset state), and train through time (whole and truncated at bptt
steps) against a tiny RNN written in numpy, whose gradient comes from finite differences."""
import json

import numpy as np
import pytest

import otc

# h_t = b + w x_t + u h_{t-1} (h_0 = 0): neat-python's recurrent network of one identity
# output node with a self-connection, imported (its weights and bias are trainable).
W, U, B = 0.5, 0.5, 0.0


@pytest.fixture()
def rnn(tmp_path):
    def node(key, kind, agg):
        return {"id": key, "type": kind, "activation": {"name": "identity", "custom": False},
                "aggregation": {"name": agg, "custom": False}, "bias": B, "response": 1.0}
    net = {"network": {"format_version": "1.0", "network_type": "recurrent",
                       "topology": {"num_inputs": 1, "num_outputs": 1, "input_keys": [-1],
                                    "output_keys": [0]},
                       "nodes": [node(0, "output", "sum"), node(-1, "input", "none")],
                       "connections": [{"from": -1, "to": 0, "weight": W, "enabled": True},
                                       {"from": 0, "to": 0, "weight": U, "enabled": True}]}}
    path = tmp_path / "rnn.json"
    path.write_text(json.dumps(net))
    m = otc.Model.import_neat_python(str(path))
    assert m.recurrent
    return m


def np_run(p, xs, h=None):
    """The numpy RNN over xs [sequences, steps]: every step's h, from h (zeros: reset)."""
    w, u, b = p
    h = np.zeros(xs.shape[0]) if h is None else h
    out = []
    for t in range(xs.shape[1]):
        h = b + w * xs[:, t] + u * h
        out.append(h)
    return np.stack(out, axis=1)


def np_train(p, xs, ys, epochs, lr, bptt):
    """SGD through time, as `otc train`: one batch (all the sequences, of one length), an
    update every bptt steps with the state carried on and the gradient cut there, the loss
    of a chunk the mean squared error over its steps and rows; the gradient by central
    differences. Returns each epoch's mean loss and the final parameters."""
    p = np.array(p, dtype=np.float64)
    losses = []
    for _ in range(epochs):
        h, total = np.zeros(xs.shape[0]), 0.0
        for t0 in range(0, xs.shape[1], bptt):
            x, y = xs[:, t0:t0 + bptt], ys[:, t0:t0 + bptt]

            def loss(q, h=h, x=x, y=y):
                return np.mean((np_run(q, x, h) - y) ** 2)
            total += loss(p) * x.size
            grad = np.array([(loss(p + e) - loss(p - e)) / 2e-6 for e in np.eye(3) * 1e-6])
            h = np_run(p, x, h)[:, -1]  # the state the old parameters carried on
            p -= lr * grad
        losses.append(total / xs.size)
    return losses, p


def test_run_one_sequence_a_batch_and_a_list(rnn):
    want = np_run((W, U, B), np.array([[1.0, 2.0, 3.0]]))[0]  # 0.5, 1.25, 2.125
    y = rnn.run(np.array([[1.0], [2.0], [3.0]]))  # [steps, inputs]: one sequence
    assert y.shape == (3, 1) and np.allclose(y[:, 0], want)
    both = rnn.run(np.array([[[1.0], [2.0], [3.0]], [[3.0], [1.0], [0.0]]], np.float32))
    assert both.shape == (2, 3, 1)
    assert np.allclose(both[..., 0], np_run((W, U, B), np.array([[1, 2, 3], [3, 1, 0]])))
    # A list of sequences of different lengths: each from a reset state, one array each.
    seqs = [np.array([[1.0], [2.0]]), [[3.0], [1.0], [2.0]], [[4.0]]]
    outs = rnn.run(seqs)
    assert isinstance(outs, list) and [o.shape for o in outs] == [(2, 1), (3, 1), (1, 1)]
    for s, o in zip(seqs, outs):
        assert np.allclose(o[:, 0], np_run((W, U, B), np.array(s, dtype=float).T)[0])


@pytest.mark.parametrize("bptt", [None, 1, 2])
def test_train_through_time_matches_numpy(rnn, bptt):
    rng = np.random.default_rng(4)
    xs = rng.uniform(-1, 1, (6, 5))
    ys = np.cumsum(xs, axis=1)  # the running sum: w and u go to 1
    losses = rnn.train(xs[..., None], ys[..., None], epochs=4, lr=0.05, batch=8,
                       optimizer="sgd", bptt=bptt)
    want, p = np_train((W, U, B), xs, ys, 4, 0.05, bptt or xs.shape[1])
    assert np.allclose(losses, want, rtol=1e-4)
    assert losses[-1] < losses[0]
    got = rnn.run(xs[..., None])[..., 0]
    assert np.allclose(got, np_run(p, xs), rtol=1e-4, atol=1e-5)


def test_train_on_a_list_of_sequences(rnn):
    # Sequences of two lengths: each length is its own batch, so the epoch's loss is the
    # mean over all steps, first seen under the initial parameters.
    xs = [np.array([[1.0], [2.0]]), np.array([[3.0], [1.0], [2.0]])]
    ys = [np.cumsum(x, axis=0) for x in xs]
    first = rnn.train(xs, ys, epochs=1, optimizer="sgd", lr=1e-9)[0]
    err = [np_run((W, U, B), x.T)[0] - y[:, 0] for x, y in zip(xs, ys)]
    assert np.isclose(first, np.mean(np.concatenate(err) ** 2), rtol=1e-5)


def test_sequence_errors_name_the_argument(rnn):
    with pytest.raises(ValueError, match=r"X\[1\]: expected shape \[steps, 1\]"):
        rnn.run([np.zeros((2, 1)), np.zeros((2, 3))])
    with pytest.raises(ValueError, match="X: expected"):
        rnn.run(np.zeros((2, 2, 2, 1)))
    with pytest.raises(TypeError, match=r"X\[0\]: cannot be read"):
        rnn.run([[["a"], ["b"]]])
    x = np.zeros((2, 3, 1))
    with pytest.raises(ValueError, match="y: 1 sequence"):
        rnn.train(x, np.zeros((1, 3, 1)))
    with pytest.raises(ValueError, match=r"y\[1\]: 2 steps, X\[1\] has 3"):
        rnn.train([x[0], x[1]], [x[0], x[1][:2]])
    with pytest.raises(ValueError, match="bptt: 4 is longer than the longest sequence"):
        rnn.train(x, x, bptt=4)
    with pytest.raises(ValueError, match="bptt: 0 is not from 1"):
        rnn.train(x, x, bptt=0)
    bad = x.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="X: sequence 1, step 2: not a finite number"):
        rnn.train(bad, x)


def test_bptt_needs_a_recurrent_model():
    m = otc.Model.load(__file__.rsplit("/", 3)[0] + "/examples/models/iris_mlp.otm")
    with pytest.raises(ValueError, match="bptt: the model is not recurrent"):
        m.train(np.zeros((2, 4)), np.zeros((2, 3)), bptt=2)
