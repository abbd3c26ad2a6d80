"""W5 (BENCHMARKS.md), PyTorch reference: inference of W1's MLP and W2's LeNet at batch 1
and 128 (eval mode, torch.inference_mode, softmax output). Prints RESULT W5
mlp_b1_samples_per_s, mlp_b128_samples_per_s, lenet_b1_samples_per_s,
lenet_b128_samples_per_s, mlp_b1_us, lenet_b1_us."""
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402
torch = C.torch

o = C.args(seconds=1.0)


def bench(name, model, shape):
    model.eval()
    x = torch.rand(*shape)
    batch = shape[0]

    def fwd():
        with torch.inference_mode():
            torch.softmax(model(x), 1)
    one = C.time_steps(fwd, 3, 5)
    steps = max(10, int(o.seconds / one))
    dt = C.time_steps(fwd, 5, steps)
    C.result('W5', '%s_b%d_samples_per_s' % (name, batch), batch / dt)
    if batch == 1:
        C.result('W5', '%s_b1_us' % name, dt * 1e6)


bench('mlp', C.mlp(), (1, 784))
bench('mlp', C.mlp(), (128, 784))
bench('lenet', C.lenet(), (1, 1, 28, 28))
bench('lenet', C.lenet(), (128, 1, 28, 28))
