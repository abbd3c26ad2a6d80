"""bench/gpu/torch_r50.py — the PyTorch peer of bench/gpu/train.lua's ResNet-50 workload on
the GPU machine: torchvision's resnet50 (v1; 4.1 GMAC forward at 224x224 like luamx's v2),
SGD with momentum, batch 64, synthetic data on the device, in float32 (PyTorch's defaults:
cuDNN convolutions may use TF32) and with autocast float16 (+ GradScaler), each in NCHW and
channels_last. Prints RESULT lines as train.lua does. Not a test.

    python3 bench/gpu/torch_r50.py [--batch 64] [--steps 20]
"""
import argparse
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
a = p.parse_args()
dev = torch.device("cuda")
flop = 3 * 2 * 4.09e9
for amp in (False, True):
    for cl in (False, True):
        torch.manual_seed(0)
        fmt = torch.channels_last if cl else torch.contiguous_format
        net = torchvision.models.resnet50().to(dev).to(memory_format=fmt)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        scaler = torch.amp.GradScaler(enabled=amp)
        x = torch.rand(a.batch, 3, 224, 224, device=dev).to(memory_format=fmt)
        y = torch.randint(0, 1000, (a.batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(net(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / a.steps
        tag = "TORCH-R50" + ("-fp16" if amp else "") + ("-cl" if cl else "")
        print(f"RESULT {tag} samples_per_s {a.batch / dt:.6g}")
        print(f"RESULT {tag} tflops {a.batch / dt * flop / 1e12:.6g}")
