import torch, time, traceback
def step(name, f):
    try:
        r = f(); print("OK", name, r if r is not None else "", flush=True)
    except Exception as e:
        print("FAIL", name, type(e).__name__, str(e).splitlines()[0][:160], flush=True)
torch.manual_seed(0)
print("MEMINFO", torch.cuda.mem_get_info(), flush=True)
a = torch.randn(2048, 2048, device="cuda"); b = torch.randn(2048, 2048, device="cuda")
def mm():
    c = (a @ b); ref = (a.double().cpu() @ b.double().cpu()); return float((c.double().cpu() - ref).abs().max())
step("matmul fp32 maxerr", mm)
step("matmul bf16", lambda: float((a.bfloat16() @ b.bfloat16()).float().sum()))
def bmm(): t = torch.randn(8, 512, 512, device="cuda", dtype=torch.half); return float((t @ t).float().abs().mean())
step("bmm fp16", bmm)
step("fft", lambda: float(torch.fft.fft(torch.randn(1 << 16, device="cuda")).abs().sum()))
step("conv2d", lambda: float(torch.nn.functional.conv2d(torch.randn(8, 3, 64, 64, device="cuda"), torch.randn(16, 3, 3, 3, device="cuda")).sum()))
step("sdpa", lambda: float(torch.nn.functional.scaled_dot_product_attention(*(torch.randn(2, 8, 128, 64, device="cuda", dtype=torch.half) for _ in range(3))).float().sum()))
step("sort", lambda: bool((torch.sort(torch.randn(1 << 20, device="cuda"))[0].diff() >= 0).all()))
step("linalg.solve (cusolver)", lambda: float(torch.linalg.solve(torch.eye(64, device="cuda") * 3, torch.ones(64, device="cuda")).sum()))
def graph():
    x = torch.zeros(1024, device="cuda"); g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g): y = x + 1
    g.replay(); torch.cuda.synchronize(); return float(y.sum())
step("cuda graph", graph)
def train():
    m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(m.parameters()); x = torch.randn(256, 1024, device="cuda")
    for _ in range(5):
        loss = m(x).square().mean(); opt.zero_grad(); loss.backward(); opt.step()
    return float(loss)
step("train AdamW", train)
def speed():
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3): x @ x
    torch.cuda.synchronize(); t = time.time()
    for _ in range(20): x @ x
    torch.cuda.synchronize(); return "%.0f TFLOP/s" % (20 * 2 * 8192 ** 3 / (time.time() - t) / 1e12)
step("bf16 8192^3", speed)
def oom():
    free, total = torch.cuda.mem_get_info()
    try: torch.empty(int(total * 1.1), dtype=torch.uint8, device="cuda"); return "NOT raised"
    except torch.cuda.OutOfMemoryError: return "raised"
step("oom past total", oom)
