import numpy as np

from tinynn import SGD, Dense, Sequential


def test_sgd_moves_the_weights():
    model = Sequential(Dense(2, 2, np.random.default_rng(0)))
    before = model.layers[0].params["w"].copy()
    model.forward(np.ones((1, 2)))
    model.backward(np.ones((1, 2)))
    SGD(model, lr=0.1).step()
    assert not np.allclose(before, model.layers[0].params["w"])
