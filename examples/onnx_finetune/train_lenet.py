"""A PyTorch LeNet (with BatchNorm) trained briefly on part of Fashion-MNIST and exported to
ONNX: the starting point of the on-device fine-tuning example (docs/onnx.md, scripts/demo.sh
step 8; tests/onnx/lenet_fashion.onnx is its output for 3000 images). Uses Debian's
python3-torch (run with /usr/bin/python3) and the IDX files of dataset-fashion-mnist.
Usage: train_lenet.py FASHION_MNIST_DIR OUT.onnx [TRAIN_IMAGES]"""
import gzip
import os
import sys

import numpy as np
import torch
from torch import nn


def idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = nn.functional.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        x = x.view(x.size(0), -1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def main():
    src, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    torch.manual_seed(0)
    torch.set_num_threads(1)
    images = idx(os.path.join(src, "train-images-idx3-ubyte.gz"))[:n]
    labels = idx(os.path.join(src, "train-labels-idx1-ubyte.gz"))[:n]
    x = torch.tensor(images, dtype=torch.float32).unsqueeze(1) / 255.0
    y = torch.tensor(labels, dtype=torch.long)
    model = LeNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    model.train()
    for i in range(0, n - 63, 64):  # one pass, batches of 64
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
        loss.backward()
        opt.step()
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), out, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}},
                      opset_version=13)
    print(f"trained LeNet on {n} Fashion-MNIST images (one pass), last batch loss "
          f"{loss.item():.3f}; wrote {out}")


if __name__ == "__main__":
    main()
