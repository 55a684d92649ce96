"""timm resnet50 (random weights: no network) trained for a few steps on random images through
a DataLoader with pin_memory=True and 4 workers. Not run by CI."""
import sys, time, torch, timm
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
data = TensorDataset(torch.randn(64 * 8, 3, 224, 224), torch.randint(0, 1000, (64 * 8,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=4, pin_memory=True,
                    persistent_workers=True)
model = timm.create_model("resnet50", pretrained=False).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
done = 0
while done < steps:
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        done += 1
        if done >= steps:
            break
torch.cuda.synchronize()
print(f"trained {done} steps, loss {loss.item():.3f}, reserved {torch.cuda.memory_reserved()}")
time.sleep(1)
