"""XOR, the smallest problem a linear model cannot solve."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import numpy as np
from tinynn import SGD, Dense, ReLU, Sequential, softmax_cross_entropy

rng = np.random.default_rng(1)
net = Sequential(Dense(2, 8, rng), ReLU(), Dense(8, 2, rng))
inputs, targets = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float), np.array([0, 1, 1, 0])
for _ in range(500):
    loss, grad = softmax_cross_entropy(net.forward(inputs), targets)
    net.backward(grad)
    SGD(net, lr=0.5).step()
print("xor predictions", net.forward(inputs).argmax(axis=1))
