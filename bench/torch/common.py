"""Shared helpers for the PyTorch reference scripts in bench/torch (not tests).

Run with Debian's interpreter: /usr/bin/python3 bench/torch/w1_mlp.py [--steps N] ...
Threads: TORCH_THREADS (default: OMP_NUM_THREADS, else 2) goes to torch.set_num_threads.
Each script prints `RESULT <id> <metric> <value>` lines, as the luamx scripts do.
"""
import argparse
import os
import sys
import time


def rss_mb():
    """VmRSS, VmHWM of this process in MB."""
    rss = hwm = 0
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1]) / 1024
            elif line.startswith('VmHWM:'):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


PRE_RSS = rss_mb()[0]
import torch  # noqa: E402
BASE_RSS = rss_mb()[0]  # after `import torch`: the baseline M1 compares against

threads = int(os.environ.get('TORCH_THREADS', os.environ.get('OMP_NUM_THREADS', '2')))
torch.set_num_threads(threads)
torch.manual_seed(0)


def args(**defaults):
    p = argparse.ArgumentParser()
    for k, v in defaults.items():
        p.add_argument('--' + k, type=type(v), default=v)
    return p.parse_args()


def result(wid, metric, value):
    print('RESULT %s %s %.6g' % (wid, metric, value))
    sys.stdout.flush()


def time_steps(fn, warmup, steps):
    """seconds per call of fn after warmup calls"""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) / steps


def mlp():
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def lenet():
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


def train_step(model, data_shape, nclass, lr=0.1, momentum=0.9):
    """one training step: forward, cross-entropy (softmax + loss, mean over the batch),
    backward, SGD with momentum"""
    x = torch.rand(*data_shape)
    y = torch.randint(0, nclass, (data_shape[0],))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def report_rss(wid):
    rss, hwm = rss_mb()
    result(wid, 'rss_mb', rss)
    result(wid, 'hwm_mb', hwm)
    result(wid, 'base_rss_mb', BASE_RSS)
