#!/usr/bin/env python3
"""Reference outputs of torch.nn.RNN/LSTM/GRU for tests/test_layers_recurrent.c
(layers_recurrent_torch_file): per case a header "cell layers in hidden T B", each layer's
weight_ih, weight_hh, bias_ih, bias_hh in PyTorch's layout, the input [T][B][in] and the output
[T][B][hidden], as whitespace-separated numbers on stdout."""
import torch

torch.manual_seed(2024)
T, B, IN, H = 7, 3, 3, 5
for name, cls in (("rnn", torch.nn.RNN), ("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
    for layers in (1, 2):
        net = cls(IN, H, num_layers=layers, batch_first=True)
        x = torch.rand(B, T, IN) * 2 - 1
        with torch.no_grad():
            y = net(x)[0]
        print(name, layers, IN, H, T, B)
        for l in range(layers):
            for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                v = getattr(net, f"{key}_l{l}").detach().flatten().tolist()
                print(" ".join(f"{a:.9g}" for a in v))
        print(" ".join(f"{a:.9g}" for a in x.transpose(0, 1).flatten().tolist()))
        print(" ".join(f"{a:.9g}" for a in y.transpose(0, 1).flatten().tolist()))
