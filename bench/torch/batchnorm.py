"""bench/torch/batchnorm.py: PyTorch's peer of bench/batchnorm.lua (not a test).

   OMP_NUM_THREADS=2 /usr/bin/python3 bench/torch/batchnorm.py

torch.nn.functional.batch_norm in training mode at the same shapes, forward and then
backward with a fixed head gradient, alternately over 7 rounds of about 50 ms, best kept.
"""
import time

from common import torch


SHAPES = [(64, 64, 32, 32), (64, 128, 16, 16), (64, 256, 8, 8), (64, 512, 4, 4),
          (32, 160, 7, 7), (32, 96, 14, 14)]


def reps_for(fn, secs):
    fn()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 <= 0.01:
        fn()
        n += 1
    return max(1, int(n * secs / (time.perf_counter() - t0)))


def times(secs, *fns):
    reps = [reps_for(f, secs) for f in fns]
    best = [float('inf')] * len(fns)
    for _ in range(7):
        for i, f in enumerate(fns):
            s = time.perf_counter()
            for _ in range(reps[i]):
                f()
            best[i] = min(best[i], (time.perf_counter() - s) / reps[i])
    return best


for sh in SHAPES:
    torch.manual_seed(1)
    x = (torch.rand(sh) * 4 - 1).requires_grad_()
    w = torch.full((sh[1],), 1.5, requires_grad=True)
    b = torch.zeros(sh[1], requires_grad=True)
    rm, rv = torch.zeros(sh[1]), torch.ones(sh[1])
    head = torch.rand(sh) * 2 - 1
    state = {}

    def fwd():
        state['y'] = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, eps=1e-3)

    def bwd():
        x.grad = w.grad = b.grad = None
        state['y'].backward(head, retain_graph=True)

    fwd()
    tf, tb = times(0.05, fwd, bwd)
    n = sh[0] * sh[1] * sh[2] * sh[3]
    name = 'x'.join(str(d) for d in sh)
    print('%-16s forward %8.1f us (%5.1f GB/s)   backward %8.1f us (%5.1f GB/s)'
          % (name, tf * 1e6, 12 * n / tf / 1e9, tb * 1e6, 20 * n / tb / 1e9))
    print('RESULT BN_%s fwd_us %g' % (name, tf * 1e6))
    print('RESULT BN_%s bwd_us %g' % (name, tb * 1e6))
