#!/usr/bin/python3
"""Fit a keyword classifier on openWakeWord embedding windows and write it as an ONNX model with
the shape of openWakeWord's own ([1, 16, 96] -> [1, 1]: Flatten, Gemm, Relu, Gemm, Sigmoid).

    train-classifier.py BASE OUT.onnx

BASE.f32 holds N windows of 16 x 96 float32, BASE.labels N bytes (1: the word), BASE.groups N
int32 room numbers. A fifth of the rooms is kept out of the fit and reported apart. numpy only
(Debian's python3-numpy, python3-onnx): a one-hidden-layer network, Adam, weighted classes.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

base, out = sys.argv[1], sys.argv[2]
labels = np.fromfile(base + '.labels', dtype=np.uint8).astype(np.float32)
x = np.fromfile(base + '.f32', dtype=np.float32).reshape(len(labels), 16 * 96)
groups = np.fromfile(base + '.groups', dtype=np.int32)
rng = np.random.default_rng(1)
kept_out = rng.random(groups.max() + 1) < 0.2
val = kept_out[groups]
mean, std = x[~val].mean(0), x[~val].std(0) + 1e-3
xs = (x - mean) / std

hidden = int(os.environ.get('IRIS_TRAIN_HIDDEN', 32))
w1 = rng.normal(0, np.sqrt(2 / xs.shape[1]), (xs.shape[1], hidden)).astype(np.float32)
b1 = np.zeros(hidden, np.float32)
w2 = rng.normal(0, np.sqrt(1 / hidden), (hidden, 1)).astype(np.float32)
b2 = np.zeros(1, np.float32)
params = [w1, b1, w2, b2]
m = [np.zeros_like(p) for p in params]
v = [np.zeros_like(p) for p in params]
train = np.flatnonzero(~val)
pos_weight = (labels[train] == 0).sum() / max(1, labels[train].sum())
lr, l2, step = 1e-3, float(os.environ.get('IRIS_TRAIN_L2', 1e-3)), 0
noise = float(os.environ.get('IRIS_TRAIN_NOISE', 0.1))


def forward(a):
    h = np.maximum(0, a @ w1 + b1)
    return h, 1 / (1 + np.exp(-(h @ w2 + b2)[:, 0]))


for epoch in range(int(os.environ.get('IRIS_TRAIN_EPOCHS', 40))):
    rng.shuffle(train)
    for i in range(0, len(train), 256):
        idx = train[i:i + 256]
        a, y = xs[idx], labels[idx]
        a = a + rng.normal(0, noise, a.shape).astype(np.float32)  # a little noise on the features
        h, p = forward(a)
        weight = np.where(y == 1, pos_weight, 1.0)
        g = ((p - y) * weight / len(idx))[:, None]
        grads = [a.T @ ((g @ w2.T) * (h > 0)) + l2 * w1, ((g @ w2.T) * (h > 0)).sum(0), h.T @ g + l2 * w2, g.sum(0)]
        step += 1
        for k, (p_, gr) in enumerate(zip(params, grads)):
            m[k] = 0.9 * m[k] + 0.1 * gr
            v[k] = 0.999 * v[k] + 0.001 * gr * gr
            p_ -= lr * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)


def report(name, mask):
    _, p = forward(xs[mask])
    y = labels[mask]
    for t in (0.5, 0.8, 0.9, 0.95):
        print(f'{name} at {t}: stop windows found {((p >= t) & (y == 1)).sum()}/{int(y.sum())}, '
              f'other windows over {((p >= t) & (y == 0)).sum()}/{int((y == 0).sum())}', file=sys.stderr)


report('fit', ~val)
report('kept-out rooms', val)

# The normalisation folded into the first layer: (x - mean) / std @ w1 + b1 = x @ (w1 / std) + (b1 - mean / std @ w1).
w1f = (w1 / std[:, None]).astype(np.float32)
b1f = (b1 - (mean / std) @ w1).astype(np.float32)
nodes = [
    helper.make_node('Flatten', ['x'], ['flat'], axis=1),
    helper.make_node('Gemm', ['flat', 'w1', 'b1'], ['h']),
    helper.make_node('Relu', ['h'], ['hr']),
    helper.make_node('Gemm', ['hr', 'w2', 'b2'], ['logit']),
    helper.make_node('Sigmoid', ['logit'], ['score']),
]
graph = helper.make_graph(
    nodes, 'iris_stop',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 16, 96])],
    [helper.make_tensor_value_info('score', TensorProto.FLOAT, [1, 1])],
    [numpy_helper.from_array(w1f, 'w1'), numpy_helper.from_array(b1f, 'b1'),
     numpy_helper.from_array(w2.astype(np.float32), 'w2'), numpy_helper.from_array(b2.astype(np.float32), 'b2')])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='iris train-stop-word')
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
print(f'wrote {out}', file=sys.stderr)
