"""Two interleaved spirals: a harder toy for a small MLP."""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import numpy as np
from tinynn import Adam, Dense, ReLU, Sequential, softmax_cross_entropy

turns = np.linspace(0.0, 3 * math.pi, 300)
arm = np.stack([turns * np.cos(turns), turns * np.sin(turns)], axis=1) / 10
points = np.concatenate([arm, -arm])
labels = np.repeat([0, 1], len(arm))
model = Sequential(Dense(2, 64, np.random.default_rng(4)), ReLU(), Dense(64, 2, np.random.default_rng(5)))
adam = Adam(model, lr=0.01)
for _ in range(400):
    _, grad = softmax_cross_entropy(model.forward(points), labels)
    model.backward(grad)
    adam.step()
print("spiral accuracy", float((model.forward(points).argmax(1) == labels).mean()))
