"""ONNX export against independent oracles: each model `otc export` writes must pass the onnx
package's checker (full_check) and strict shape inference, and its outputs, computed by the
small numpy evaluator below (written from the ONNX operator specification, opset 13, for the
operators otc writes), must match `otc run` on the same rows. Recurrent models are stepped one
row at a time from zero state, state_out:D fed back as state_in:D, as `otc run` steps them.
Usage: onnx_export_check.py OTC MAKE_EXPORT_MODELS NEAT_PYTHON_FIXTURES WORKDIR"""
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skipped: python3-onnx or python3-numpy is not installed")
    sys.exit(77)

RTOL, ATOL = 1e-5, 1e-5
f32 = np.float32


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def axis_list(node, inputs, a):
    if len(inputs) > 1 and inputs[1] is not None:
        return tuple(int(v) for v in inputs[1])
    if "axes" in a:
        return tuple(a["axes"])
    return None


def window(x, kernel, strides, pads, dilations, pad_value):
    """The [B,C,OH,OW,KH,KW] windows of x [B,C,H,W] (pads: top, left, bottom, right)."""
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                constant_values=pad_value)
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.empty(x.shape[:2] + (oh, ow, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, :, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                       j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return out


def conv(x, w, b, a):
    g = a.get("group", 1)
    kh, kw = w.shape[2:]
    win = window(x, (kh, kw), a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)),
                 a.get("dilations", (1, 1)), 0)
    cin = x.shape[1] // g
    cout = w.shape[0] // g
    parts = []
    for k in range(g):
        xs = win[:, k * cin:(k + 1) * cin].astype(np.float64)
        ws = w[k * cout:(k + 1) * cout].astype(np.float64)
        parts.append(np.einsum("bchwij,ocij->bohw", xs, ws))
    y = np.concatenate(parts, axis=1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(f32)


def softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def run_node(node, inputs):
    op, a, x = node.op_type, attrs(node), inputs[0]
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
              "Max": np.maximum, "Less": np.less, "Greater": np.greater, "Equal": np.equal}
    unary = {"Neg": np.negative, "Abs": np.abs, "Exp": np.exp, "Log": np.log, "Tanh": np.tanh,
             "Sin": np.sin, "Cos": np.cos, "Sqrt": np.sqrt, "Identity": lambda v: v}
    if op in binary:
        return [binary[op](x, inputs[1])]
    if op in unary:
        return [unary[op](x)]
    if op == "Where":
        return [np.where(x, inputs[1], inputs[2])]
    if op == "MatMul":
        return [np.matmul(x.astype(np.float64), inputs[1].astype(np.float64)).astype(f32)]
    if op == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if op == "Expand":
        return [x * np.ones(tuple(inputs[1]), dtype=x.dtype)]
    reducers = {"ReduceSum": np.sum, "ReduceProd": np.prod, "ReduceMin": np.min,
                "ReduceMax": np.max, "ReduceMean": np.mean}
    if op in reducers:
        axes = axis_list(node, inputs, a)
        keep = bool(a.get("keepdims", 1))
        return [np.asarray(reducers[op](x, axis=axes, keepdims=keep), dtype=x.dtype)]
    if op == "ArgMax":
        return [np.expand_dims(np.argmax(x, axis=a["axis"]), a["axis"]).astype(np.int64)]
    if op == "GatherElements":
        return [np.take_along_axis(x, inputs[1], axis=a["axis"])]
    if op == "TopK":
        assert a.get("largest") == 0 and a.get("sorted", 1) == 1
        idx = np.argsort(x, axis=a["axis"], kind="stable")[:, :int(inputs[1][0])]
        return [np.take_along_axis(x, idx, axis=a["axis"]), idx.astype(np.int64)]
    if op == "Slice":
        sl = [slice(None)] * x.ndim
        for s, e, ax in zip(inputs[1], inputs[2], inputs[3]):
            sl[int(ax)] = slice(int(s), int(e))
        return [x[tuple(sl)]]
    if op == "Concat":
        return [np.concatenate(inputs, axis=a["axis"])]
    if op == "Gather":
        return [np.take(x, inputs[1], axis=a.get("axis", 0))]
    if op == "Reshape":
        return [x.reshape(tuple(int(v) for v in inputs[1]))]
    if op == "Flatten":
        return [x.reshape(x.shape[0], -1)]
    if op == "Softmax":
        return [softmax(x, a.get("axis", -1))]
    if op == "LogSoftmax":
        return [np.log(softmax(x, a.get("axis", -1)))]
    if op == "Conv":
        return [conv(x, inputs[1], inputs[2] if len(inputs) > 2 else None, a)]
    if op in ("MaxPool", "AveragePool"):
        pad = -np.inf if op == "MaxPool" else 0
        win = window(x, a["kernel_shape"], a.get("strides", (1, 1)), a.get("pads", (0, 0, 0, 0)),
                     (1, 1), pad)
        assert op == "MaxPool" or a.get("count_include_pad") == 1
        return [(win.max if op == "MaxPool" else win.mean)(axis=(4, 5)).astype(f32)]
    raise AssertionError(f"the evaluator has no {op}")


def evaluate(model, feeds):
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env.update(feeds)
    with np.errstate(all="ignore"):  # Where evaluates both arms (1/0 under inv, exp(big))
        for node in model.graph.node:
            outs = run_node(node, [env[i] if i else None for i in node.input])
            for name, v in zip(node.output, outs):
                env[name] = np.asarray(v)
    return {o.name: env[o.name] for o in model.graph.output}


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def otc_outputs(otc, model, rows, work):
    path = os.path.join(work, "in.csv")
    np.savetxt(path, rows, delimiter=",", fmt="%.9g")
    text = sh(otc, "run", model, "-i", path, "--no-header")
    lines = text.splitlines()[1:]  # the first names the output columns
    return np.array([[float(c) for c in ln.split(",")] for ln in lines], dtype=f32)


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim]


def check(otc, otm, work, rng, steps_or_rows=7):
    onnx_path = os.path.join(work, os.path.basename(otm)[:-4] + ".onnx")
    sh(otc, "export", otm, "-o", onnx_path)
    model = onnx.load(onnx_path)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    ins = model.graph.input
    x_in = ins[0]
    shape = dims(x_in)
    assert shape[0] == "batch", f"{otm}: first input dim {shape[0]}"
    width = int(np.prod(shape[1:]))
    rows = rng.uniform(-2.5, 2.5, size=(steps_or_rows, width)).astype(f32)
    want = otc_outputs(otc, otm, rows, work)
    states = [i for i in ins[1:] if i.name.startswith("state_in:")]
    assert len(ins) == 1 + len(states), f"{otm}: unexpected inputs {[i.name for i in ins]}"
    outs = [o.name for o in model.graph.output if not o.name.startswith("state_out:")]
    if states:
        state = {s.name: np.zeros([1] + dims(s)[1:], dtype=f32) for s in states}
        got = []
        for r in rows:
            feeds = dict(state, **{x_in.name: r.reshape([1] + shape[1:])})
            res = evaluate(model, feeds)
            got.append(np.concatenate([res[o].reshape(1, -1) for o in outs], axis=1))
            state = {s.name: res["state_out:" + s.name[len("state_in:"):]] for s in states}
        got = np.concatenate(got, axis=0)
    else:
        res = evaluate(model, {x_in.name: rows.reshape([len(rows)] + shape[1:])})
        got = np.concatenate([res[o].reshape(len(rows), -1) for o in outs], axis=1)
    assert got.shape == want.shape, f"{otm}: onnx {got.shape} vs otc run {want.shape}"
    bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)  # sqrt below 0: NaN
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise AssertionError(f"{otm}: {bad.sum()} values differ, first at row {r} column {c}: "
                             f"onnx {got[r, c]!r} vs otc run {want[r, c]!r}")
    return len(model.graph.node), bool(states)


def main():
    otc, make_models, fixtures, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    sh(make_models, work)
    rng = np.random.default_rng(20261128)
    models = [os.path.join(work, m) for m in
              ("elementwise.otm", "neurons.otm", "structural.otm", "cnn.otm", "rnn.otm",
               "lstm.otm", "gru.otm", "neuron_loop.otm", "taken_names.otm")]
    # neat-python's own networks (every activation and aggregation among them), imported
    for kind in ("feedforward", "recurrent", "ctrnn"):
        for k in (0, 13, 27):
            src = os.path.join(fixtures, f"{kind}_101_{k:03d}.json")
            dst = os.path.join(work, f"np_{kind}_{k:03d}.otm")
            sh(otc, "import", src, "-o", dst)
            models.append(dst)
    # an otc-evolved champion (exit 1 when not solved: the champion is saved all the same)
    champ = os.path.join(work, "xor_champion.otm")
    ini = os.path.join(fixtures, "..", "..", "examples", "neat", "xor.ini")
    r = subprocess.run([otc, "evolve", ini, "--task", "xor", "--seed", "1", "--threads", "1",
                        "--generations", "30", "--out", champ], capture_output=True, text=True)
    assert r.returncode in (0, 1) and os.path.exists(champ), f"evolve: {r.stderr}"
    models.append(champ)
    # the shipped double-pole champion (recurrent, evolved by otc)
    models.append(os.path.join(fixtures, "..", "..", "examples", "deploy", "dpnv_champion.otm"))
    for m in models:
        n, recurrent = check(otc, m, work, rng)
        print(f"ok {os.path.basename(m)}: {n} ONNX nodes{', stepped with state' if recurrent else ''}")
    # what the export refuses: exit 2 naming the node, nothing written
    for m, says in (("loss_output.otm", "node 'the_loss' (mse)"),
                    ("unsized.otm", "node 'lonely' (neuron)")):
        out = os.path.join(work, m[:-4] + ".onnx")
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([otc, "export", os.path.join(work, m), "-o", out], capture_output=True,
                           text=True)
        assert r.returncode == 2 and says in r.stderr, f"{m}: exit {r.returncode}: {r.stderr}"
        assert not os.path.exists(out), f"{m}: {out} written"
        print(f"ok {m} refused: {r.stderr.strip()}")


if __name__ == "__main__":
    main()
