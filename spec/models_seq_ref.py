"""PyTorch reference for spec/models_seq_spec.lua: mx.models.transformer_encoder and
mx.models.seq2seq against PyTorch's own modules of the same design.

Usage: models_seq_ref.py DIR... Each DIR holds opts.txt ("<key> <value>" lines: model,
and the builder's options), manifest.txt and arrays.bin as spec/helpers.lua's
array_writer writes them: kinds arg (luamx's arguments: inputs and parameters), head (the
gradient luamx's backward was given, for the transformer), out (luamx's output) and grad
(luamx's gradients). The transformer is torch.nn.TransformerEncoderLayer (batch_first,
post-norm, dropout 0) stacked; seq2seq is torch.nn.Embedding, torch.nn.LSTM/GRU per layer
and Luong attention written with torch.bmm; lstm_ocr is MXNet example/ctc's cell written
out in torch with torch.nn.functional.ctc_loss (kind loss: luamx's per-sequence losses). Everything runs in float64. Prints one line
per compared array: "cmp <DIR> <kind> <name> <max abs err> <max abs ref>". Exits with
status 3 when torch is missing.
"""
import os
import struct
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(3)

torch.set_default_dtype(torch.float64)


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
        out.append((kind, name, torch.tensor(vals).reshape(shape)))
    return out


def transformer(o, P):
    """The luamx parameter names -> nn.TransformerEncoderLayer's, layer by layer."""
    layers, leaves = [], {}
    for l in range(int(o['num_layers'])):
        p = 'encoder_layer%d_' % l
        m = torch.nn.TransformerEncoderLayer(int(o['units']), int(o['num_heads']), int(o['hidden_size']),
                                             dropout=0.0, activation=o['activation'],
                                             layer_norm_eps=float(o['layer_norm_eps']), batch_first=True)
        with torch.no_grad():
            m.self_attn.in_proj_weight.copy_(torch.cat([P[p + 'attn_query_weight'], P[p + 'attn_key_weight'],
                                                        P[p + 'attn_value_weight']]))
            m.self_attn.in_proj_bias.copy_(torch.cat([P[p + 'attn_query_bias'], P[p + 'attn_key_bias'],
                                                      P[p + 'attn_value_bias']]))
            for mod, name in ((m.self_attn.out_proj, 'attn_proj'), (m.linear1, 'ffn_1'), (m.linear2, 'ffn_2')):
                mod.weight.copy_(P[p + name + '_weight'])
                mod.bias.copy_(P[p + name + '_bias'])
            for mod, name in ((m.norm1, 'ln1'), (m.norm2, 'ln2')):
                mod.weight.copy_(P[p + name + '_gamma'])
                mod.bias.copy_(P[p + name + '_beta'])
        m.train()
        layers.append(m)
        for q in ('query', 'key', 'value'):
            leaves[p + 'attn_%s_weight' % q] = ('qkv_w', m, q)
            leaves[p + 'attn_%s_bias' % q] = ('qkv_b', m, q)
        for mod, name in ((m.self_attn.out_proj, 'attn_proj'), (m.linear1, 'ffn_1'), (m.linear2, 'ffn_2')):
            leaves[p + name + '_weight'] = ('param', mod.weight)
            leaves[p + name + '_bias'] = ('param', mod.bias)
        for mod, name in ((m.norm1, 'ln1'), (m.norm2, 'ln2')):
            leaves[p + name + '_gamma'] = ('param', mod.weight)
            leaves[p + name + '_beta'] = ('param', mod.bias)
    x = P['data'].clone().requires_grad_(True)
    y = x
    for m in layers:
        y = m(y)

    def grad(name):
        if name == 'data':
            return x.grad
        what = leaves[name]
        if what[0] == 'param':
            return what[1].grad
        m, q = what[1], what[2]
        i = ('query', 'key', 'value').index(q)
        units = int(o['units'])
        g = m.self_attn.in_proj_weight.grad if what[0] == 'qkv_w' else m.self_attn.in_proj_bias.grad
        return g[i * units:(i + 1) * units]
    return y, grad


def seq2seq(o, P):
    H, L = int(o['hidden']), int(o['num_layers'])
    leaves = {}

    def leaf(name):
        t = P[name].clone().requires_grad_(True)
        leaves[name] = t
        return t

    def rnn(side, x, begin):
        states = []
        for k in range(L):
            p = '%s_l%d_' % (side, k)
            mod = (torch.nn.LSTM if o['cell'] == 'lstm' else torch.nn.GRU)(x.shape[2], H, batch_first=True)
            with torch.no_grad():
                for theirs, ours in (('weight_ih_l0', 'i2h_weight'), ('weight_hh_l0', 'h2h_weight'),
                                     ('bias_ih_l0', 'i2h_bias'), ('bias_hh_l0', 'h2h_bias')):
                    getattr(mod, theirs).copy_(P[p + ours])
                    leaves[p + ours] = getattr(mod, theirs)
            x, st = mod(x) if begin is None else mod(x, begin[k])
            states.append(st)
        return x, states

    src = F.embedding(P['src'].long(), leaf('src_embed_weight'))
    tgt = F.embedding(P['tgt'].long(), leaf('tgt_embed_weight'))
    enc, states = rnn('enc', src, None)
    dec, _ = rnn('dec', tgt, states)
    keys = enc if o['attention'] == 'dot' else torch.matmul(enc, leaf('attn_key_weight').t())
    alpha = torch.softmax(torch.bmm(dec, keys.transpose(1, 2)), dim=-1)
    ctx = torch.bmm(alpha, enc)
    h = torch.tanh(F.linear(torch.cat([ctx, dec], 2), leaf('attn_combine_weight'), leaf('attn_combine_bias')))
    logits = F.linear(h, leaf('out_weight'), leaf('out_bias')).reshape(-1, int(o['tgt_vocab']))
    loss = F.cross_entropy(logits, P['softmax_label'].reshape(-1).long(), reduction='sum')
    return torch.softmax(logits, dim=1), loss, lambda name: leaves[name].grad


def lstm_ocr(o, P):
    """MXNet example/ctc's network: its own LSTM cell (gates in the order input,
    transform, forget, output), time-major rows into pred_fc, softmax inside CTC."""
    L, T, H = int(o['num_lstm_layer']), int(o['seq_len']), int(o['num_hidden'])
    leaves = {}

    def leaf(name):
        t = P[name].clone().requires_grad_(True)
        leaves[name] = t
        return t

    W = [[leaf('l%d_%s' % (l, n)) for n in ('i2h_weight', 'i2h_bias', 'h2h_weight', 'h2h_bias')] for l in range(L)]
    h = [P['l%d_init_h' % l] for l in range(L)]
    c = [P['l%d_init_c' % l] for l in range(L)]
    x = P['data']
    rows = []
    for t in range(T):
        inp = x[:, t, :]
        for l in range(L):
            g = F.linear(inp, W[l][0], W[l][1]) + F.linear(h[l], W[l][2], W[l][3])
            gi, gg, gf, go = g.chunk(4, dim=1)
            c[l] = torch.sigmoid(gf) * c[l] + torch.sigmoid(gi) * torch.tanh(gg)
            h[l] = torch.sigmoid(go) * torch.tanh(c[l])
            inp = h[l]
        rows.append(inp)
    pred = F.linear(torch.cat(rows, 0), leaf('pred_fc_weight'), leaf('pred_fc_bias'))
    N = x.shape[0]
    logp = F.log_softmax(pred.reshape(T, N, -1), dim=2)
    label = P['label'].long()
    lengths = (label != 0).sum(1)
    targets = torch.cat([label[i, :lengths[i]] for i in range(N)])
    loss = F.ctc_loss(logp, targets, torch.full((N,), T, dtype=torch.long), lengths, blank=0,
                      reduction='none')
    return torch.softmax(pred, dim=1), loss, lambda name: leaves[name].grad


def main(d):
    o = dict(line.split(None, 1) for line in open(os.path.join(d, 'opts.txt')).read().splitlines())
    arrays = read_arrays(d)
    P = {name: t for kind, name, t in arrays if kind == 'arg'}
    if o['model'] == 'transformer_encoder':
        out, grad = transformer(o, P)
        head = [t for kind, _, t in arrays if kind == 'head'][0]
        (out * head).sum().backward()
    elif o['model'] == 'lstm_ocr':
        out, loss, grad = lstm_ocr(o, P)
        ref_loss = loss.detach()
        loss.sum().backward()
        for kind, name, t in arrays:
            if kind == 'loss':
                print('cmp', d, 'loss', name, '%.6g' % (t - ref_loss).abs().max().item(),
                      '%.6g' % ref_loss.abs().max().item())
    else:
        out, loss, grad = seq2seq(o, P)
        loss.backward()
    for kind, name, t in arrays:
        if kind == 'out':
            ref = out.detach()
        elif kind == 'grad':
            g = grad(name)
            ref = torch.zeros_like(t) if g is None else g
        else:
            continue
        err = (t - ref).abs().max().item()
        print('cmp', d, kind, name, '%.6g' % err, '%.6g' % ref.abs().max().item())


for case in sys.argv[1:]:
    main(case)
