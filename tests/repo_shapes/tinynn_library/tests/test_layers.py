import numpy as np

from tinynn import Dense


def test_dense_shapes():
    layer = Dense(3, 2, np.random.default_rng(0))
    assert layer.forward(np.ones((4, 3))).shape == (4, 2)
