"""PyTorch side of bench/zoo.lua (not a test): the network of an MXNet symbol JSON.

Usage: zoo.py --json FILE --batch N --shape C,H,W --classes K [--steps S] [--warmup W]
[--infer_steps I]. Builds the network node by node from the JSON with torch.nn.functional
(Convolution with groups, BatchNorm with running statistics, Activation relu, clip,
elemwise_add, Pooling, Flatten, FullyConnected, Concat, identity; SoftmaxOutput becomes
the cross-entropy with mean reduction), Xavier-uniform weights, SGD lr 0.01 momentum 0.9.
Prints RESULT torch train_samples_per_s and infer1_samples_per_s (eval mode,
inference_mode, batch 1).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

F = torch.nn.functional
# LUAMX_BENCH_CLOCK=cpu: the process's CPU time instead of the wall clock, as bench/common.lua
# does (for comparing on a machine other jobs load, with one thread)
CLOCK = time.process_time if os.environ.get('LUAMX_BENCH_CLOCK') == 'cpu' else time.perf_counter


def time_steps(fn, warmup, steps):
    """seconds per call of fn after warmup calls, on CLOCK"""
    for _ in range(warmup):
        fn()
    t0 = CLOCK()
    for _ in range(steps):
        fn()
    return (CLOCK() - t0) / steps


def tup(s):
    return tuple(int(v) for v in s.strip('()[] ').split(',') if v.strip())


def truth(s):
    return s in ('True', 'true', '1')


class JsonNet(torch.nn.Module):
    def __init__(self, sym, shapes):
        super().__init__()
        self.nodes = sym['nodes']
        self.head = sym['heads'][0][0]
        self.params = torch.nn.ParameterDict()
        self.names = {}
        for i, n in enumerate(self.nodes):
            if n['op'] != 'null' or n['name'] in ('data', 'softmax_label'):
                continue
            key = 'p%d' % i
            self.names[i] = key
            name, shape = n['name'], shapes[n['name']]
            if name.endswith('_moving_mean') or name.endswith('_moving_var'):
                self.register_buffer(key, torch.zeros(shape) if 'mean' in name else torch.ones(shape))
            elif name.endswith('_gamma'):
                self.params[key] = torch.nn.Parameter(torch.ones(shape))
            elif name.endswith('_beta') or name.endswith('_bias'):
                self.params[key] = torch.nn.Parameter(torch.zeros(shape))
            else:
                w = torch.empty(shape)
                torch.nn.init.xavier_uniform_(w.reshape(shape[0], -1))
                self.params[key] = torch.nn.Parameter(w)

    def leaf(self, i):
        key = self.names[i]
        return self.params[key] if key in self.params else getattr(self, key)

    def forward(self, x):
        v = {}
        for i, n in enumerate(self.nodes):
            op, a = n['op'], n.get('attrs', {})
            if op == 'null':
                v[i] = x if n['name'] == 'data' else (None if n['name'] == 'softmax_label' else self.leaf(i))
                continue
            xs = [v[e[0]] for e in n['inputs']]
            if op == '_copy' or op == 'SoftmaxOutput':
                y = xs[0]
            elif op == 'Convolution':
                y = F.conv2d(xs[0], xs[1], None if truth(a.get('no_bias', 'False')) else xs[2],
                             tup(a.get('stride', '(1, 1)')) or 1, tup(a.get('pad', '(0, 0)')) or 0, 1,
                             int(a.get('num_group', '1')))
            elif op == 'BatchNorm':
                gamma = None if truth(a.get('fix_gamma', 'True')) else xs[1]
                y = F.batch_norm(xs[0], xs[3], xs[4], gamma, xs[2], self.training, 0.1,
                                 float(a.get('eps', '0.001')))
            elif op == 'Activation':
                y = F.relu(xs[0])
            elif op == 'clip':
                y = F.hardtanh(xs[0], float(a['a_min']), float(a['a_max']))
            elif op == 'elemwise_add':
                y = xs[0] + xs[1]
            elif op == 'Pooling':
                if truth(a.get('global_pool', 'False')):
                    y = F.adaptive_avg_pool2d(xs[0], 1) if a.get('pool_type') == 'avg' else F.adaptive_max_pool2d(xs[0], 1)
                else:
                    k, s, p = tup(a['kernel']), tup(a.get('stride', '(1, 1)')), tup(a.get('pad', '(0, 0)'))
                    y = F.max_pool2d(xs[0], k, s, p) if a.get('pool_type', 'max') == 'max' else F.avg_pool2d(xs[0], k, s, p)
            elif op == 'Flatten':
                y = xs[0].flatten(1)
            elif op == 'FullyConnected':
                y = F.linear(xs[0].flatten(1), xs[1], xs[2])
            elif op == 'Concat':
                y = torch.cat(xs, 1)
            else:
                raise SystemExit('bench/torch/zoo.py: operator %s is not handled' % op)
            v[i] = y
        return v[self.head]


def main():
    o = common.args(json='', batch=64, shape='3,32,32', classes=10, steps=5, warmup=2,
                    **{'infer_steps': 20})
    sym = json.load(open(o.json))
    chw = [int(s) for s in o.shape.split(',')]
    shapes = infer_shapes(sym, [o.batch] + chw)
    net = JsonNet(sym, shapes)
    net.train()
    step = common.train_step(net, [o.batch] + chw, o.classes, lr=0.01, momentum=0.9)
    dt = time_steps(step, o.warmup, o.steps)
    common.result('torch', 'train_samples_per_s', o.batch / dt)
    net.eval()
    x1 = torch.rand(1, *chw)
    with torch.inference_mode():
        di = time_steps(lambda: torch.softmax(net(x1), 1), o.warmup, o.infer_steps)
    common.result('torch', 'infer1_samples_per_s', 1 / di)


def infer_shapes(sym, data_shape):
    """parameter shapes from the nodes' attributes (the layers the zoo uses)"""
    shapes, chans = {}, {}
    nodes = sym['nodes']
    for i, n in enumerate(nodes):
        op, a = n['op'], n.get('attrs', {})
        if op == 'null':
            if n['name'] == 'data':
                chans[i] = data_shape[1]
            continue
        ins = [e[0] for e in n['inputs']]
        c = chans.get(ins[0])
        if op == 'Convolution':
            k = tup(a['kernel'])
            nf, g = int(a['num_filter']), int(a.get('num_group', '1'))
            shapes[nodes[ins[1]]['name']] = (nf, c // g) + k
            if len(ins) > 2:
                shapes[nodes[ins[2]]['name']] = (nf,)
            chans[i] = nf
        elif op == 'BatchNorm':
            for j in ins[1:]:
                shapes[nodes[j]['name']] = (c,)
            chans[i] = c
        elif op == 'FullyConnected':
            chans[i] = int(a['num_hidden'])
        elif op == 'Concat':
            chans[i] = sum(chans[j] for j in ins)
        else:
            chans[i] = c
    # FullyConnected input size: run the network once without them, measuring
    fc = [(i, n) for i, n in enumerate(nodes) if n['op'] == 'FullyConnected']
    for i, n in fc:
        ins = [e[0] for e in n['inputs']]
        nh = int(n['attrs']['num_hidden'])
        shapes[nodes[ins[1]]['name']] = (nh, flat_size(sym, shapes, ins[0], data_shape))
        shapes[nodes[ins[2]]['name']] = (nh,)
    return shapes


def flat_size(sym, shapes, upto, data_shape):
    sub = {'nodes': sym['nodes'][:upto + 1], 'heads': [[upto, 0, 0]]}
    net = JsonNet(sub, shapes)
    net.eval()
    with torch.no_grad():
        y = net(torch.zeros(1, *data_shape[1:]))
    return int(y[0].numel())


main()
