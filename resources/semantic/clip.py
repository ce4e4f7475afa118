"""CLIP image embeddings of figure crops (open_clip), weights from a local file only.

No package on the registry ships CLIP weights and no hub is reachable, so weights come from
`cold_storage.clip_weights` (+ `clip_arch`). Without them `load_clip` returns None with the
reason; callers log it and figures stay recallable through their caption and OCR text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class ClipEmbedder:
    model: object  # open_clip.CLIP
    preprocess: object  # PIL image -> (3, H, W) tensor
    tokenizer: object | None = None
    name: str = ""

    def embed_images(self, paths: Sequence[str | Path], batch_size: int = 16) -> np.ndarray:
        """(N, D) float32 unit vectors; raises naming the file if an image cannot be read."""
        import torch
        from PIL import Image

        out = []
        self.model.eval()
        for i in range(0, len(paths), batch_size):
            images = []
            for p in paths[i:i + batch_size]:
                try:
                    with Image.open(p) as im:
                        images.append(self.preprocess(im.convert("RGB")))
                except OSError as exc:
                    raise OSError(f"{p}: cannot read figure image: {exc}") from exc
            with torch.no_grad():
                z = self.model.encode_image(torch.stack(images))  # (B, D)
                out.append(torch.nn.functional.normalize(z.float(), dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(N, D) float32 unit vectors of texts in the same space (needs a tokenizer)."""
        import torch

        if self.tokenizer is None:
            raise RuntimeError("this CLIP embedder has no tokenizer")
        with torch.no_grad():
            z = self.model.encode_text(self.tokenizer(list(texts)))  # (N, D)
        return torch.nn.functional.normalize(z.float(), dim=-1).numpy()


def load_clip(weights: str | None, arch: str = "ViT-B-32") -> tuple[ClipEmbedder | None, str]:
    """(embedder, "") with weights from the local file, or (None, why not)."""
    if not weights:
        return None, ("no CLIP weights configured (cold_storage.clip_weights is null): figure "
                      "images are not embedded; figures stay recallable by caption and OCR text")
    path = Path(weights).expanduser()
    if not path.is_file():
        return None, f"cold_storage.clip_weights={weights!r}: no such file; figures not embedded"
    import open_clip

    try:
        model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=str(path))
    except Exception as exc:  # a wrong arch for the file, a corrupt file: say which
        return None, f"cannot load CLIP {arch} from {path}: {type(exc).__name__}: {exc}"
    return ClipEmbedder(model, preprocess, open_clip.get_tokenizer(arch), f"{arch}:{path.name}"), ""


def tiny_random_clip(seed: int = 0, image_size: int = 32) -> ClipEmbedder:
    """A randomly initialised tiny open_clip.CLIP for tests (never for quality claims)."""
    import open_clip
    import torch
    from open_clip.model import CLIPTextCfg, CLIPVisionCfg
    from torchvision import transforms

    torch.manual_seed(seed)
    model = open_clip.CLIP(
        embed_dim=16,
        vision_cfg=CLIPVisionCfg(layers=1, width=32, head_width=16, patch_size=8,
                                 image_size=image_size),
        text_cfg=CLIPTextCfg(context_length=16, vocab_size=1000, width=32, heads=2, layers=1),
    )
    preprocess = transforms.Compose([transforms.Resize((image_size, image_size)),
                                     transforms.ToTensor()])
    return ClipEmbedder(model, preprocess, None, "tiny-random")
