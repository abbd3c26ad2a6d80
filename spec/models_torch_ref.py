"""PyTorch reference for spec/models_torch_spec.lua: runs an MXNet symbol JSON with PyTorch.

Usage: models_torch_ref.py DIR... Each DIR holds symbol.json (the network as luamx wrote it),
manifest.txt and arrays.bin written by the spec: one manifest line per array,
"<kind> <name> <ndim> <dims...>", kinds arg, aux, act (luamx's output of each ReLU and
clip node, by node name), out (luamx's outputs) and grad (luamx's gradients), stored in
that order as float32 little-endian. This script rebuilds
the graph node by node with torch.nn.functional (its own definition of each MXNet
operator used by the zoo, from MXNet's documented semantics), runs the forward in
training mode and the backward of the SoftmaxOutput head (the gradient of the summed
cross-entropy), and prints one line per compared array: "cmp <DIR> <kind> <name> <max abs
err> <max abs ref>", and "kink <DIR> <distance>": how close the input of a ReLU or
clip came to its corner, or the two largest values of a max-pooling window to a tie (float32 rounding on the luamx side may put an input that close
on the other side, which changes that element's gradient: such a case is not comparable
and the spec draws it again) (one process for all the networks: importing torch is the slow part). Exits with status 3 when torch is missing, 4 on an operator it does not
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
    # pooling_convention 'full' rounds the output size up (torch's ceil_mode)
    ceil = a.get('pooling_convention', 'valid') == 'full'
    if a.get('pool_type', 'max') == 'max':
        return F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil)
    return F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=True)


def max_pool_gap(x, a):
    """the smallest gap between the two largest values of a max-pooling window (a near
    tie routes the gradient by rounding)"""
    n, c, h, w = x.shape
    if truth(a.get('global_pool', 'False')):
        k, s, p = (h, w), (1, 1), (0, 0)
    else:
        k, s, p = tup(a['kernel']), tup(a.get('stride', '(1, 1)')) or (1, 1), tup(a.get('pad', '(0, 0)')) or (0, 0)
    xp = F.pad(x, (p[1], p[1], p[0], p[0]), value=float('-inf'))
    cols = F.unfold(xp.reshape(n * c, 1, h + 2 * p[0], w + 2 * p[1]), k, stride=s)
    top = cols.topk(2, dim=1).values
    gap = (top[:, 0] - top[:, 1]).abs()
    # exact ties are the zeros a ReLU wrote: its gradient there is 0 whichever way the
    # pooling routes it, so only near ties count
    gap = gap[torch.isfinite(gap) & (gap > 0)]
    return gap.min().item() if gap.numel() else float('inf')


def run(node, a, xs, params, acts=None):
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
    # ReLU and clip pass the gradient where luamx's forward passed the input (its output
    # strictly inside the range): float32 and float64 may put an input within rounding
    # of a corner on different sides, and the comparison is about the rest
    if op == 'Activation':
        assert a['act_type'] == 'relu'
        y = acts.get(node['name']) if acts else None
        if y is None:
            return F.relu(xs[0])
        return torch.where(y > 0, xs[0], torch.zeros_like(xs[0]))
    if op == 'clip':
        lo, hi = float(a['a_min']), float(a['a_max'])
        y = acts.get(node['name']) if acts else None
        if y is None:
            return torch.clamp(xs[0], lo, hi)
        return torch.where((y > lo) & (y < hi), xs[0], torch.clamp(xs[0], lo, hi).detach())
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
    acts = {name: t for kind, name, t in arrays if kind == 'act'}
    leaves = {}
    for name, t in params.items():
        leaves[name] = t.clone().requires_grad_(True)
    values = {}
    label = None
    kink = float('inf')  # the input closest to a ReLU/clip corner, in float64
    for i, node in enumerate(sym['nodes']):
        if node['op'] == 'null':
            values[i] = leaves[node['name']]
            if node['name'].endswith('_label'):
                label = leaves[node['name']]
            continue
        xs = [values[e[0]] for e in node['inputs']]
        a = node.get('attrs', {})
        if node['op'] == 'Activation':
            kink = min(kink, xs[0].detach().abs().min().item())
        elif node['op'] == 'clip':
            x = xs[0].detach()
            kink = min(kink, (x - float(a['a_min'])).abs().min().item(),
                       (x - float(a['a_max'])).abs().min().item())
        elif node['op'] == 'Pooling' and a.get('pool_type', 'max') == 'max':
            kink = min(kink, max_pool_gap(xs[0].detach(), a))
        values[i] = run(node, a, xs, params, acts)
    logits = values[sym['heads'][0][0]]
    prob = torch.softmax(logits, dim=1)
    loss = F.cross_entropy(logits, label.detach().long(), reduction='sum')
    loss.backward()
    print('kink', d, '%.6g' % kink)
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
