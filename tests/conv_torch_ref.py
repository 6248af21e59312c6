#!/usr/bin/env python3
"""Reference values of torch.nn.functional.conv2d / max_pool2d / avg_pool2d (count_include_pad)
for tests/test_conv.c (conv_torch_file): per case a header line, then the input x, (conv:
the weight and, when present, the bias), a random R, the output y and the gradients of
sum(y * R) by x (conv: and by the weight and bias), as whitespace-separated numbers.
Headers: "conv B C H W O KH KW sh sw ph pw dh dw groups bias" and
"maxpool|avgpool B C H W KH KW sh sw ph pw"."""
import torch
import torch.nn.functional as F

torch.manual_seed(7)


def put(t):
    print(" ".join(f"{a:.9g}" for a in t.detach().flatten().tolist()))


def rand(*shape):
    return (torch.rand(*shape) * 2 - 1).requires_grad_(True)


convs = [  # B C H W O KH KW sh sw ph pw dh dw groups bias
    (2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2, 1),
    (1, 3, 9, 9, 4, 3, 3, 3, 2, 0, 1, 2, 1, 1, 0),
    (2, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, 1),
    (3, 2, 8, 5, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1, 1),
]
for B, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, g, bias in convs:
    x, w = rand(B, C, H, W), rand(O, C // g, KH, KW)
    b = rand(O) if bias else None
    y = F.conv2d(x, w, b, stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups=g)
    r = torch.rand(y.shape) * 2 - 1
    (y * r).sum().backward()
    print("conv", B, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, g, bias)
    for t in [x, w] + ([b] if bias else []) + [r, y, x.grad, w.grad] + ([b.grad] if bias else []):
        put(t)

pools = [  # op B C H W KH KW sh sw ph pw
    ("maxpool", 2, 3, 7, 8, 3, 2, 2, 3, 1, 1),
    ("avgpool", 2, 3, 7, 8, 3, 2, 2, 1, 1, 0),
    ("maxpool", 1, 2, 6, 6, 2, 2, 2, 2, 0, 0),
    ("avgpool", 1, 2, 5, 6, 2, 3, 1, 2, 1, 1),
]
for op, B, C, H, W, KH, KW, sh, sw, ph, pw in pools:
    x = rand(B, C, H, W)
    if op == "maxpool":
        y = F.max_pool2d(x, (KH, KW), (sh, sw), (ph, pw))
    else:
        y = F.avg_pool2d(x, (KH, KW), (sh, sw), (ph, pw), count_include_pad=True)
    r = torch.rand(y.shape) * 2 - 1
    (y * r).sum().backward()
    print(op, B, C, H, W, KH, KW, sh, sw, ph, pw)
    for t in (x, r, y, x.grad):
        put(t)
