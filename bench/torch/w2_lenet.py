"""W2 (BENCHMARKS.md), PyTorch reference: LeNet on 1x28x28, batch 64, cross-entropy,
SGD lr 0.1 momentum 0.9. Prints RESULT W2 train_samples_per_s and RSS."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402

o = C.args(steps=60, warmup=5, batch=64)
step = C.train_step(C.lenet(), (o.batch, 1, 28, 28), 10)
dt = C.time_steps(step, o.warmup, o.steps)
C.result('W2', 'train_samples_per_s', o.batch / dt)
C.report_rss('W2')
