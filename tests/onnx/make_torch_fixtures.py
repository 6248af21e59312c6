#!/usr/bin/python3
"""Writes the PyTorch fixtures of tests/test_onnx_torch.c into tests/onnx/: each small model
exported by torch.onnx (NAME.onnx) and, in NAME.json, an input batch and PyTorch's outputs
for it, the oracle the test compares otc's import with. Run from anywhere:
    /usr/bin/python3 tests/onnx/make_torch_fixtures.py
The files are committed, so the test itself needs no torch."""
import json
import os

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.b = nn.Linear(16, 8)
        self.c = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.tanh(self.b(h))
        h = nn.functional.leaky_relu(h, 0.1) + torch.sigmoid(h)
        return torch.log_softmax(self.c(h), dim=1)


class LeNetBn(nn.Module):
    """Conv + BatchNorm (fused by the exporter), a BatchNorm on the input (a per-channel
    affine), pools, a view (a Shape/Gather/Concat chain), a BatchNorm1d after a Linear."""

    def __init__(self):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(2)
        self.c1 = nn.Conv2d(2, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 6, 3, groups=2, dilation=1)
        self.bn2 = nn.BatchNorm2d(6)
        self.f1 = nn.Linear(6 * 2 * 2, 10)
        self.bn3 = nn.BatchNorm1d(10)
        self.f2 = nn.Linear(10, 4)

    def forward(self, x):
        x = self.bn0(x)
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.c1(x))), 2)
        x = nn.functional.avg_pool2d(nn.functional.elu(self.bn2(self.c2(x))), 2)
        x = x.view(x.size(0), -1)
        x = torch.relu(self.bn3(self.f1(x)))
        return torch.softmax(self.f2(x), dim=-1)


class Skip(nn.Module):
    """A residual block with scalar arithmetic, a clamp, a split and a concat."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.clamp(self.a(x), -0.5, 0.7)
        y = self.b(h) * 0.5 + x - 1.0
        p, q = torch.split(y, [3, 5], dim=1)
        return torch.cat([torch.abs(q), nn.functional.softplus(p)], dim=1), torch.exp(-y)


class Reduce(nn.Module):
    """Spatial reductions (global pools as exporters write them): mean, max, sum."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 3, 3, padding=(1, 1), stride=2)
        self.fc = nn.Linear(9, 2)

    def forward(self, x):
        h = torch.tanh(self.c(x))
        feats = [h.mean([2, 3]), h.amax(dim=(2, 3)), h.sum([2, 3])]
        return self.fc(torch.cat(feats, dim=1))


class Unary(nn.Module):
    """The IEEE unary ops standalone, between layers: Sqrt (of |h|), Cos, Sin of a Sqrt, and
    Reciprocal (of 1 + h^2)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 6)
        self.b = nn.Linear(12, 3)

    def forward(self, x):
        h = self.a(x)
        u = torch.sqrt(torch.abs(h))
        y = self.b(torch.cat([u, torch.cos(h)], dim=1))
        return torch.cat([torch.sqrt(torch.sigmoid(y)), torch.reciprocal(1 + h * h),
                          torch.sin(u)], dim=1)


class LayerNorm(nn.Module):
    """LayerNormalization (opset 17) over the features (torch 1.13 exports no LayerNorm without
    its affine: an empty Scale, which its own checker refuses)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 8)
        self.ln = nn.LayerNorm(8)
        self.b = nn.Linear(8, 3)
        self.ln2 = nn.LayerNorm(3, eps=1e-3)

    def forward(self, x):
        return self.ln2(self.b(torch.tanh(self.ln(self.a(x)))))


class Conv1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(3, 4, 3, padding=1)
        self.c2 = nn.Conv1d(4, 2, 2, stride=2)

    def forward(self, x):
        return torch.flatten(self.c2(torch.selu(self.c(x))), 1)


class Recurrent(nn.Module):
    """An RNN/LSTM/GRU (batch_first) and a Linear on every step, on the last (last=True) or
    on the final state (last="h")."""

    def __init__(self, cell, last, layers=1, bidirectional=False):
        super().__init__()
        self.r = cell(3, 5, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(10 if bidirectional else 5, 2)
        self.last = last

    def forward(self, x):
        y, h = self.r(x)
        if self.last == "h":  # the last layer's final state, PyTorch's h_n[-1]
            return self.fc((h[0] if isinstance(h, tuple) else h)[-1])
        return self.fc(y[:, -1] if self.last else y)


def export_refused(name, model, shape, opset):
    """A model otc refuses (tests/onnx_cli.cmake checks the message): the file only."""
    model.eval()
    torch.onnx.export(model, (torch.zeros(shape),), os.path.join(HERE, name + ".onnx"),
                      opset_version=opset, input_names=["x"], output_names=["y0"])


def export_asymmetric(name, seed):
    """A Conv with asymmetric pads and a MaxPool with auto_pad SAME_UPPER (pads 0 before, 1
    after), which torch.onnx never writes: the model is built with onnx.helper, PyTorch
    computes the reference (explicit padding, then the unpadded op)."""
    import onnx
    from onnx import helper, numpy_helper
    g = torch.Generator().manual_seed(seed)
    w = torch.randn((3, 2, 3, 3), generator=g) * 0.5
    b = torch.randn((3,), generator=g) * 0.5
    x = torch.randn((2, 2, 5, 6), generator=torch.Generator().manual_seed(seed + 100))
    pads = [0, 1, 1, 2]  # h_begin, w_begin, h_end, w_end
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=pads, name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y0"], kernel_shape=[2, 2],
                              auto_pad="SAME_UPPER", name="pool")]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                    ["batch", 2, 5, 6])],
        [helper.make_tensor_value_info("y0", onnx.TensorProto.FLOAT, ["batch", 3, 4, 7])],
        [numpy_helper.from_array(w.numpy(), "w"), numpy_helper.from_array(b.numpy(), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))
    F = nn.functional
    c = F.conv2d(F.pad(x, (pads[1], pads[3], pads[0], pads[2])), w, b)
    y = F.max_pool2d(F.pad(torch.relu(c), (0, 1, 0, 1), value=float("-inf")), 2, stride=1)
    ref = {"input": "x", "shape": list(x.shape), "x": x.flatten().tolist(), "seq": None,
           "outputs": [{"name": "y0", "shape": list(y.shape), "y": y.flatten().tolist()}]}
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(ref, f)


def fill(model, seed):
    """Random weights and BatchNorm statistics, so a fold that is wrong shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)


def export(name, model, shape, opset, n_out=1, seed=0, seq=None):
    fill(model, seed)
    model.eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 100))
    path = os.path.join(HERE, name + ".onnx")
    outs = ["y%d" % i for i in range(n_out)]
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["x"],
                      output_names=outs,
                      dynamic_axes={k: {0: "batch", 1: "time"} if seq and (k == "x" or seq == "all")
                                    else {0: "batch"} for k in ["x"] + outs})
    with torch.no_grad():
        ys = model(x)
    if not isinstance(ys, tuple):
        ys = (ys,)
    # seq: the input is [batch, time, features], run by otc a step at a time; its outputs
    # are every step's ("all") or the last step's ("last").
    ref = {"input": "x", "shape": list(x.shape), "x": x.flatten().tolist(), "seq": seq,
           "outputs": [{"name": o, "shape": list(y.shape), "y": y.flatten().tolist()}
                       for o, y in zip(outs, ys)]}
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(ref, f)


if __name__ == "__main__":
    torch.manual_seed(0)
    export("mlp", Mlp(), (5, 6), 11)
    export("lenet_bn", LeNetBn(), (3, 2, 12, 12), 13, seed=1)
    export("skip", Skip(), (4, 8), 17, n_out=2, seed=2)
    export("conv1d", Conv1d(), (2, 3, 10), 13, seed=3)
    export("unary", Unary(), (4, 5), 13, seed=11)
    export("layernorm", LayerNorm(), (4, 6), 17, seed=12)
    export("reduce", Reduce(), (2, 2, 7, 6), 13, seed=8)
    export_asymmetric("conv_asym", seed=10)
    export("rnn", Recurrent(nn.RNN, False), (2, 4, 3), 13, seed=4, seq="all")
    export("lstm_last", Recurrent(nn.LSTM, True), (2, 5, 3), 13, seed=5, seq="last")
    export("gru", Recurrent(nn.GRU, False), (3, 4, 3), 14, seed=6, seq="all")
    export("lstm2", Recurrent(nn.LSTM, False, layers=2), (2, 4, 3), 13, seed=7, seq="all")
    export("gru2_h", Recurrent(nn.GRU, "h", layers=2), (2, 4, 3), 13, seed=9, seq="last")
    export_refused("gru_bidir", Recurrent(nn.GRU, True, bidirectional=True), (2, 4, 3), 13)
