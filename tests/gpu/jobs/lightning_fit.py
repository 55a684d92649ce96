"""Lightning: Trainer.fit of a small MLP on random data, 1 GPU, 60 steps, pinned DataLoader.
Not run by CI."""
import torch
from torch.utils.data import DataLoader, TensorDataset
try:
    import lightning as L
except ImportError:
    import pytorch_lightning as L

class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.ReLU(),
                                       torch.nn.Linear(8192, 10))
    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

data = TensorDataset(torch.randn(256 * 60, 4096), torch.randint(0, 10, (256 * 60,)))
loader = DataLoader(data, batch_size=256, num_workers=2, pin_memory=True)
trainer = L.Trainer(accelerator="gpu", devices=1, max_steps=60, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(Net(), loader)
print("fit done", flush=True)
