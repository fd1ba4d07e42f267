"""safetensors read/write with nothing but torch and the standard library (Debian 12 has no
python3-safetensors; `pip install safetensors` users can call safetensors.torch.save_file and
load_file instead: the files are the same format). trainer/README.md shows these lines."""

import json
import struct

import torch

_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
           torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}
_SAME_SIZE_INT = {8: torch.int64, 4: torch.int32, 2: torch.int16}


def save_file(tensors, path, metadata=None):
    """Writes {name: tensor} as safetensors (header, then each tensor's bytes)."""
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        raw = t.reshape(-1).view(_SAME_SIZE_INT[t.element_size()]).numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_file(path):
    """{name: tensor} of a safetensors file, and its metadata."""
    import numpy as np
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    out, data = {}, blob[8 + n:]
    names = {v: k for k, v in _DTYPES.items()}
    for name, e in header.items():
        dtype = names[e["dtype"]]
        b, end = e["data_offsets"]
        size = torch.tensor([], dtype=dtype).element_size()
        ints = np.frombuffer(data[b:end], dtype={8: np.int64, 4: np.int32, 2: np.int16}[size])
        out[name] = torch.from_numpy(ints.copy()).view(dtype).reshape(e["shape"])
    return out, meta
