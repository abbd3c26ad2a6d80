"""W4 (BENCHMARKS.md), PyTorch reference: a chain of 1000 tiny elementwise ops (x*0.9,
x+0.1, tanh(x), repeated) on 16 floats, eager. Prints RESULT W4 us_per_op_fwd (autograd
recording), us_per_op_fwd_bwd (plus backward with a head gradient of ones),
us_per_op_nograd (torch.no_grad)."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402
torch = C.torch

o = C.args(steps=300, warmup=20, ops=1000, n=16)
x0 = (torch.rand(o.n) * 2 - 1).requires_grad_()
head = torch.ones(o.n)


def chain(x):
    for i in range(1, o.ops + 1):
        k = i % 3
        if k == 1:
            x = x * 0.9
        elif k == 2:
            x = x + 0.1
        else:
            x = torch.tanh(x)
    return x


def fb():
    x0.grad = None
    chain(x0).backward(head)


def nograd():
    with torch.no_grad():
        chain(x0)


fwd = C.time_steps(lambda: chain(x0), o.warmup, o.steps)
fwdbwd = C.time_steps(fb, o.warmup, o.steps)
ng = C.time_steps(nograd, o.warmup, o.steps)
C.result('W4', 'us_per_op_fwd', fwd / o.ops * 1e6)
C.result('W4', 'us_per_op_fwd_bwd', fwdbwd / o.ops * 1e6)
C.result('W4', 'us_per_op_nograd', ng / o.ops * 1e6)
