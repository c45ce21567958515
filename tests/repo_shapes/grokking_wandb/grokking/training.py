"""The training loop: full-batch AdamW on modular addition, logged to Weights & Biases."""

import wandb
from data import modular_addition, one_hot
from model import MLP


def main(args):
    wandb.init(project="grokking", config=vars(args))
    (train_pairs, train_y), (val_pairs, val_y) = modular_addition(
        args.prime, args.training_fraction, args.seed
    )
    train_x, val_x = one_hot(train_pairs, args.prime), one_hot(val_pairs, args.prime)
    model = MLP(2 * args.prime, args.hidden, args.prime, args.seed)
    for step in range(1, args.num_steps + 1):
        model.step(train_x, train_y, args.lr, args.weight_decay)
        if step % args.eval_every == 0:
            train_loss, train_acc = model.loss_and_accuracy(train_x, train_y)
            val_loss, val_acc = model.loss_and_accuracy(val_x, val_y)
            wandb.log(
                {
                    "training": {"loss": train_loss, "accuracy": train_acc},
                    "validation/loss": val_loss,
                    "validation/accuracy": val_acc,
                    "step": step,
                }
            )
    wandb.finish()
