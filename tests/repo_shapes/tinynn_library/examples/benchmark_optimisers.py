"""SGD against Adam on the same problem, by wall time and final loss."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import numpy as np
from tinynn import SGD, Adam, Dense, Sequential, softmax_cross_entropy

features = np.random.default_rng(6).normal(size=(1000, 10))
classes = (features.sum(axis=1) > 0).astype(int)
for make in (lambda m: SGD(m, lr=0.1), lambda m: Adam(m, lr=0.01)):
    net = Sequential(Dense(10, 2, np.random.default_rng(7)))
    opt, began = make(net), time.perf_counter()
    for _ in range(100):
        cost, grad = softmax_cross_entropy(net.forward(features), classes)
        net.backward(grad)
        opt.step()
    print(type(opt).__name__, round(cost, 4), f"{time.perf_counter() - began:.3f}s")
