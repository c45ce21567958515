"""Fit a line with a single dense layer and plain gradient steps."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import numpy as np
from tinynn import Dense

rng = np.random.default_rng(2)
x = rng.uniform(-1, 1, (200, 1))
y = 3.0 * x + 0.5 + rng.normal(0, 0.1, x.shape)
layer = Dense(1, 1, rng)
for step in range(300):
    error = layer.forward(x) - y
    layer.backward(2 * error / len(x))
    for name in layer.params:
        layer.params[name] -= 0.1 * layer.grads[name]
print(f"slope {layer.params['w'][0, 0]:.2f} intercept {layer.params['b'][0]:.2f}")
