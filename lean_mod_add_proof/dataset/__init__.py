"""The data set: the network's exact evaluator, the Weights.lean format, the trainer and the
generator that turns trained networks into tasks."""
