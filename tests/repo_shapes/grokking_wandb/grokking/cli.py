"""Grokking on modular addition: python grokking/cli.py --help"""

import argparse

from training import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prime", type=int, default=23)
    parser.add_argument("--training_fraction", type=float, default=0.4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight_decay", type=float, default=1.0)
    parser.add_argument("--num_steps", type=int, default=100000)
    parser.add_argument("--eval_every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
