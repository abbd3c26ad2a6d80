"""W3 (BENCHMARKS.md), PyTorch reference: LSTM language model, vocab 10000, embed 200,
2 LSTM layers of 200, Linear 10000 + cross-entropy at every step, batch 32, lengths drawn
uniformly from {10,...,60} (the same LCG draws as bench/w3_lstm.lua), SGD lr 0.01
momentum 0.9. --mode fused: nn.LSTM (W3a); --mode cell: two nn.LSTMCell unrolled in
Python (W3b). Prints RESULT W3a|W3b train_tokens_per_s and RSS above the import baseline."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402
import time  # noqa: E402
torch = C.torch
nn = torch.nn

o = C.args(steps=30, warmup=8, batch=32, mode='fused', vocab=10000, embed=200, hidden=200,
           layers=2)
wid = 'W3a' if o.mode == 'fused' else 'W3b'
V, E, H, L, N = o.vocab, o.embed, o.hidden, o.layers, o.batch
buckets = [10, 20, 30, 40, 50, 60]


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        if o.mode == 'fused':
            self.rnn = nn.LSTM(E, H, L, batch_first=True)
        else:
            self.cells = nn.ModuleList([nn.LSTMCell(E if i == 0 else H, H) for i in range(L)])
        self.pred = nn.Linear(H, V)

    def forward(self, x):
        e = self.embed(x)                       # N, T, E
        if o.mode == 'fused':
            out, _ = self.rnn(e)
        else:
            T = e.shape[1]
            hs = [(e.new_zeros(N, H), e.new_zeros(N, H)) for _ in range(L)]
            outs = []
            for t in range(T):
                h = e[:, t]
                for i, cell in enumerate(self.cells):
                    hs[i] = cell(h, hs[i])
                    h = hs[i][0]
                outs.append(h)
            out = torch.stack(outs, 1)
        return self.pred(out.reshape(-1, H))


model = LM()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
batches = {n: (torch.randint(1, V, (N, n)), torch.randint(1, V, (N, n))) for n in buckets}


def step(n):
    x, y = batches[n]
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y.reshape(-1))
    loss.backward()
    opt.step()


x, seq = 4242, []
for _ in range(o.warmup + o.steps):
    x = (1103515245 * x + 12345) % 2147483648
    seq.append(buckets[int(x / 2147483648 * len(buckets))])
for n in buckets:
    step(n)
for n in seq[:o.warmup]:
    step(n)
t0, tokens = time.perf_counter(), 0
for n in seq[o.warmup:]:
    step(n)
    tokens += N * n
dt = time.perf_counter() - t0
C.result(wid, 'train_tokens_per_s', tokens / dt)
rss, hwm = C.rss_mb()
C.result(wid, 'rss_mb', rss)
C.result(wid, 'hwm_mb', hwm)
C.result(wid, 'base_rss_mb', C.BASE_RSS)
C.result(wid, 'rss_above_base_mb', hwm - C.BASE_RSS)
