"""Reference values for spec/optimizer_more_spec.lua from PyTorch's Adamax and NAdam.

PyTorch's definitions match MXNet 1.9's for these settings: Adamax with eps = 0
(MXNet's u = max(beta2*u, |g|) has no epsilon) and NAdam with momentum_decay equal to
MXNet's schedule_decay; both add wd*w to the gradient before the moments, as MXNet does
(no gradient clipping, rescale_grad 1). Prints one line per optimizer: the name, then the
weights after each step, space-separated. Exits with status 3 when torch is missing.
"""
import sys

try:
    import torch
except ImportError:
    sys.exit(3)

W0 = [0.5, -1.0, 2.0, 0.25]
GRADS = [[0.1, -0.2, 0.3, 0.0], [-0.5, 0.4, 0.05, 1.0], [0.2, 0.2, -0.3, -0.1]]


def run(make):
    w = torch.tensor(W0, dtype=torch.float64, requires_grad=True)
    opt = make([w])
    out = []
    for g in GRADS:
        opt.zero_grad()
        w.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        out.append(w.detach().tolist())
    return out


RESULTS = {
    "adamax": run(lambda p: torch.optim.Adamax(p, lr=0.002, betas=(0.9, 0.999), eps=0.0,
                                               weight_decay=0.01)),
    "nadam": run(lambda p: torch.optim.NAdam(p, lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                                             weight_decay=0.01, momentum_decay=0.004)),
}

for name, steps in RESULTS.items():
    print(name, " ".join(repr(v) for step in steps for v in step))
