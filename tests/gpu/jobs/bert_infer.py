"""transformers: a BERT-base-sized model built from its config (random weights: no network),
fp16 inference over random token batches. Not run by CI."""
import time, torch
from transformers import BertConfig, BertModel

model = BertModel(BertConfig()).half().cuda().eval()
ids = torch.randint(0, 30522, (64, 256), device="cuda")
with torch.inference_mode():
    for _ in range(40):
        out = model(input_ids=ids).last_hidden_state
torch.cuda.synchronize()
print(f"hidden {tuple(out.shape)}, allocated {torch.cuda.memory_allocated()}", flush=True)
time.sleep(1)
