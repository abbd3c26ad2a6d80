"""PyTorch reference for spec/ops_sampling_torch_spec.lua: BilinearSampler, GridGenerator
(affine) and SpatialTransformer against torch.nn.functional.grid_sample / affine_grid
(align_corners=True, zero padding: MXNet maps -1 and 1 to the first and last pixel
centres and reads zeros outside).

Usage: ops_sampling_torch_ref.py DIR: manifest.txt and arrays.bin as spec/helpers.lua's
array_writer writes them, kinds 'in' (the inputs: data, grid or theta, head), 'out' and
'grad' (luamx's), and opts.txt ("op <name>", "H <h>", "W <w>"). Prints
"cmp <kind> <name> <max abs err> <max abs ref>" per compared array (float64). Exits with
status 3 without torch.
"""
import os
import struct
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(3)


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


def main(d):
    o = dict(line.split(None, 1) for line in open(os.path.join(d, 'opts.txt')).read().splitlines())
    arrays = read_arrays(d)
    x = {name: t.clone().requires_grad_(True) for kind, name, t in arrays if kind == 'in' and name != 'head'}
    head = [t for kind, name, t in arrays if name == 'head'][0]
    op = o['op']
    if op == 'BilinearSampler':
        y = F.grid_sample(x['data'], x['grid'].permute(0, 2, 3, 1), mode='bilinear', padding_mode='zeros',
                          align_corners=True)
    elif op == 'GridGenerator':
        n = x['theta'].shape[0]
        g = F.affine_grid(x['theta'].reshape(n, 2, 3), (n, 1, int(o['H']), int(o['W'])), align_corners=True)
        y = g.permute(0, 3, 1, 2)
    else:  # SpatialTransformer: affine grid, then the bilinear sampler
        n, c = x['data'].shape[0], x['data'].shape[1]
        g = F.affine_grid(x['theta'].reshape(n, 2, 3), (n, c, int(o['H']), int(o['W'])), align_corners=True)
        y = F.grid_sample(x['data'], g, mode='bilinear', padding_mode='zeros', align_corners=True)
    (y * head).sum().backward()
    for kind, name, t in arrays:
        if kind == 'out':
            ref = y.detach()
        elif kind == 'grad':
            ref = x[name].grad
        else:
            continue
        print('cmp', kind, name, '%.6g' % (t - ref).abs().max().item(), '%.6g' % ref.abs().max().item())


main(sys.argv[1])
