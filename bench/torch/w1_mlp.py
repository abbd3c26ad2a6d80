"""W1 (BENCHMARKS.md), PyTorch reference: MLP 784-512-512-10, batch 128, cross-entropy,
SGD lr 0.1 momentum 0.9; one step = forward + backward + update. Prints
RESULT W1 train_samples_per_s and RSS."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402

o = C.args(steps=200, warmup=10, batch=128)
step = C.train_step(C.mlp(), (o.batch, 784), 10)
dt = C.time_steps(step, o.warmup, o.steps)
C.result('W1', 'train_samples_per_s', o.batch / dt)
C.report_rss('W1')
