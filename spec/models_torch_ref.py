"""PyTorch reference for spec/models_torch_spec.lua: runs an MXNet symbol JSON with PyTorch.

Usage: models_torch_ref.py DIR... Each DIR holds symbol.json (the network as luamx wrote it),
manifest.txt and arrays.bin written by the spec: one manifest line per array,
"<kind> <name> <ndim> <dims...>", kinds arg, aux, out (luamx's outputs) and grad
(luamx's gradients), stored in that order as float32 little-endian. This script rebuilds
the graph node by node with torch.nn.functional (its own definition of each MXNet
operator used by the zoo, from MXNet's documented semantics), runs the forward in
training mode and the backward of the SoftmaxOutput head (the gradient of the summed
cross-entropy), and prints one line per compared array: "cmp <DIR> <kind> <name> <max abs
err> <max abs ref>" (one process for all the networks: importing torch is the slow part). Exits with status 3 when torch is missing, 4 on an operator it does not
know.
"""
import json
import os
import struct
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(3)


def tup(s):
    return tuple(int(v) for v in s.strip('()[] ').split(',') if v.strip())


def truth(s):
    return s in ('True', 'true', '1')


def read_arrays(d):
    blob = open(os.path.join(d, 'arrays.bin'), 'rb').read()
    pos, out = 0, []
    for line in open(os.path.join(d, 'manifest.txt')):
        f = line.split()
        kind, name, ndim = f[0], f[1], int(f[2])
        shape = [int(v) for v in f[3:3 + ndim]]
        n = 1
        for v in shape:
            n *= v
        vals = struct.unpack_from('<%df' % n, blob, pos)
        pos += 4 * n
        out.append((kind, name, torch.tensor(vals, dtype=torch.float64).reshape(shape)))
    return out


def pool(x, a):
    kernel = tup(a.get('kernel', '(1, 1)'))
    if truth(a.get('global_pool', 'False')):
        kernel, stride, pad = x.shape[2:], (1, 1), (0, 0)
    else:
        stride = tup(a.get('stride', '(1, 1)')) or (1, 1)
        pad = tup(a.get('pad', '(0, 0)')) or (0, 0)
    if a.get('pool_type', 'max') == 'max':
        return F.max_pool2d(x, kernel, stride, pad)
    return F.avg_pool2d(x, kernel, stride, pad, count_include_pad=True)


def run(node, a, xs, params):
    op = node['op']
    if op == '_copy':
        return xs[0]
    if op == 'Convolution':
        bias = None if truth(a.get('no_bias', 'False')) else xs[2]
        return F.conv2d(xs[0], xs[1], bias, tup(a.get('stride', '(1, 1)')) or 1,
                        tup(a.get('pad', '(0, 0)')) or 0, 1, int(a.get('num_group', '1')))
    if op == 'BatchNorm':
        gamma = torch.ones_like(xs[1]) if truth(a.get('fix_gamma', 'True')) else xs[1]
        mean, var = xs[3].detach().clone(), xs[4].detach().clone()
        return F.batch_norm(xs[0], mean, var, gamma, xs[2], True, 0.1, float(a.get('eps', '0.001')))
    if op == 'Activation':
        assert a['act_type'] == 'relu'
        return F.relu(xs[0])
    if op == 'clip':
        return torch.clamp(xs[0], float(a['a_min']), float(a['a_max']))
    if op == 'elemwise_add':
        return xs[0] + xs[1]
    if op == 'Pooling':
        return pool(xs[0], a)
    if op == 'Flatten':
        return xs[0].reshape(xs[0].shape[0], -1)
    if op == 'FullyConnected':
        return F.linear(xs[0].reshape(xs[0].shape[0], -1), xs[1], xs[2])
    if op == 'Concat':
        return torch.cat(xs, int(a.get('dim', '1')))
    if op == 'SoftmaxOutput':
        return xs[0]  # logits; the softmax is taken below
    print('unknown operator', op)
    sys.exit(4)


def main(d):
    sym = json.load(open(os.path.join(d, 'symbol.json')))
    arrays = read_arrays(d)
    params = {name: t for kind, name, t in arrays if kind in ('arg', 'aux')}
    leaves = {}
    for name, t in params.items():
        leaves[name] = t.clone().requires_grad_(True)
    values = {}
    label = None
    for i, node in enumerate(sym['nodes']):
        if node['op'] == 'null':
            values[i] = leaves[node['name']]
            if node['name'].endswith('_label'):
                label = leaves[node['name']]
            continue
        xs = [values[e[0]] for e in node['inputs']]
        values[i] = run(node, node.get('attrs', {}), xs, params)
    logits = values[sym['heads'][0][0]]
    prob = torch.softmax(logits, dim=1)
    loss = F.cross_entropy(logits, label.detach().long(), reduction='sum')
    loss.backward()
    for kind, name, t in arrays:
        if kind == 'out':
            ref = prob.detach()
        elif kind == 'grad':
            g = leaves[name].grad
            ref = torch.zeros_like(t) if g is None else g
        else:
            continue
        err = (t - ref).abs().max().item()
        print('cmp', d, kind, name, '%.6g' % err, '%.6g' % ref.abs().max().item())


for case in sys.argv[1:]:
    main(case)
